/**
 * What one run of the host workflow shares between its main loop, its update
 * handlers and its operation runner: the host's state, the running operation,
 * the shim's nudges, the view, search attributes, status publishing and the
 * hand-over to a fresh run.
 */
import { allHandlersFinished, condition, continueAsNew, log, patched, setCurrentDetails, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { bytesCounted, countEvents, countedPast, eventsCounted, runInputBytes } from '../common/history-count';
import type { ProvisioningState } from '../../model/host';
import { SEARCH_ATTRIBUTES } from '../../model/search-attributes';
import { parseBmcAddress } from '../../model/bmc';
import { DEFAULT_MAX_HISTORY_BYTES, type HostState, type HostView, type HostWorkflowInput, type OperationRecord } from '../../contracts/host';
import { powerRequestsView } from './rules/power-requests';
import { statusPublisher } from './status-publish';
import { hostUid } from './uid';
import { routeHostActivities, siteUnreachable } from './site-route';
import { settingsHeld } from './rules/servicing';
import type { HostEvent } from '../../model/host-event';
import { provisionerFor, type Provisioner } from './provisioners/provisioner';
import { hostCurrentDetails } from './ui-details';
import { DEFAULT_SITE } from '../../model/site';
import { homeSite } from './rules/site';

export const now = (): string => new Date().toISOString();

/**
 * Past `max` bytes by the run's own estimate (history-count.ts), or, once it
 * has written a quarter of that, past the server's size backstop or its continue-as-new
 * suggestion. Only the run's own growth counts: its input (the state, a large inventory
 * included) is written again by each hand-over, so a run whose input alone passes the server's
 * threshold must not hand over at once, and again, for ever.
 */
function bytesPast(max: number): boolean {
  const grown = bytesCounted();
  if (grown > max) return true;
  if (grown < max / 4) return false;
  const info = workflowInfo();
  return info.continueAsNewSuggested || info.historySize > 2 * (runInputBytes() + max);
}

export interface HostContext {
  readonly s: HostState;
  /** The operation running now (none while backing off). */
  running: OperationRecord | undefined;
  /** Waiting for a provisioning permit (host-permit.ts): the state it waits to enter. */
  delayed?: { state: ProvisioningState; since: string };
  /** Bumped by the shim's updates (directives, restore, inspect, pause) so waits notice them. */
  nudges: number;
  /** Events those updates produced, published by the main loop. */
  readonly pendingEvents: HostEvent[];
  nudge(events: HostEvent[]): void;
  view(): HostView;
  /** Upserts the host's search attributes (skipped when unchanged), what the Temporal UI's list filters on, and sets the run's current details. */
  indexForSearch(): void;
  /**
   * From now until flushIndex(), indexForSearch() sets the current details only: what changed is upserted once, by
   * the flush. Only where the workflow is known to reach a flush before it waits for anything (holdIndex's callers).
   */
  holdIndex(): void;
  /** Ends a hold: upserts what changed during it (nothing without a hold). */
  flushIndex(): void;
  setState(state: ProvisioningState): void;
  /** Queues the status (and an Event) for writing back to the BareMetalHost when the shim drives this host; never waits for the write. */
  writeStatus(event?: HostEvent): Promise<void>;
  historyTooLong(): boolean;
  /** `carry` runs last, just before the hand-over, to put into the state what the next run needs. */
  continueAsNewWithState(carry?: () => void): Promise<never>;
  /** Who carries out the host's operations (provisioners/provisioner.ts), chosen once the host has a provisioning state. */
  provisioner(): Provisioner;
  /** Awaited before any hand-over: what this run sent must arrive while it is open (host-permit.ts's releases). */
  beforeHandOver?: () => Promise<void>;
}

export function hostContext(s: HostState): HostContext {
  /** Search attributes last upserted by this run (a new run upserts once at start). */
  let published: string | undefined;
  /** indexForSearch upserts nothing until flushIndex (holdIndex). */
  let held = false;
  const status = statusPublisher(s);
  let provisioner: Provisioner | undefined;
  // The host's hardware calls go to its site's task queue, read at each call (site-route.ts). A BareMetalHost
  // is told when its site stops or starts taking them: its SiteReachable condition, written with the status.
  routeHostActivities(
    () => ({ site: homeSite(s), watchSeconds: s.options.siteWatchSeconds }),
    (dark) => {
      if (!s.options.publishStatus) return;
      // A status write where a run recorded before had none: the marker keeps such a run's commands as they were.
      // patch since v0.2.0
      if (!patched('site-unreachable-condition')) return;
      void status.writeStatus(
        dark
          ? { type: 'Warning', reason: 'SiteUnreachable', message: dark.reason }
          : { type: 'Normal', reason: 'SiteReachable', message: `site "${homeSite(s) ?? DEFAULT_SITE}" takes the host's work again` },
      );
    },
  );

  const ctx: HostContext = {
    s,
    running: undefined,
    nudges: 0,
    pendingEvents: [],
    nudge: (events) => {
      ctx.nudges += 1;
      ctx.pendingEvents.push(...events);
    },
    view: () => ({
      ref: s.ref,
      ...(hostUid(s) ? { uid: hostUid(s) } : {}),
      spec: s.spec,
      status: s.status,
      generation: s.generation,
      deleteRequested: s.deleteRequested,
      currentOperation: ctx.running,
      ...(ctx.delayed ? { delayed: ctx.delayed } : {}),
      operations: s.operations,
      retryAt: s.retryAt,
      power: powerRequestsView(s.power),
      ...(s.paused ? { paused: s.paused } : {}),
      ...(s.labels ? { labels: s.labels } : {}),
      ...(s.cleanRequest ? { cleanRequest: s.cleanRequest } : {}),
      ...(settingsHeld(s) ? { settingsHeld: settingsHeld(s) } : {}),
      ...(s.updatePolicy ? { updatePolicy: s.updatePolicy } : {}),
      ...(s.firmwareHeld ? { firmwareHeld: s.firmwareHeld } : {}),
      ...(s.firmwareServiced ? { firmwareServiced: s.firmwareServiced } : {}),
      ...(s.options.publishStatus ? { managedBy: 'kubernetes' as const } : {}),
      ...(s.movedTo ? { movedTo: s.movedTo } : {}),
      ...(s.siteMove ? { siteMove: s.siteMove } : {}),
      ...(siteUnreachable() ? { siteUnreachable: siteUnreachable() } : {}),
    }),
    indexForSearch: () => {
      // An operation whose outcome is recorded is over for the reader, though its run still winds down.
      const live = ctx.running?.outcome === 'running' ? ctx.running : undefined;
      const bmc = s.spec?.bmc ? parseBmcAddress(s.spec.bmc.address) : undefined;
      const pairs: Extract<Parameters<typeof upsertSearchAttributes>[0], unknown[]> = [
        { key: SEARCH_ATTRIBUTES.hostName, value: s.ref.name },
        { key: SEARCH_ATTRIBUTES.hostNamespace, value: s.ref.namespace },
        { key: SEARCH_ATTRIBUTES.provisioningState, value: s.status.provisioning.state || 'unmanaged' },
        { key: SEARCH_ATTRIBUTES.operationalStatus, value: s.status.operationalStatus },
        { key: SEARCH_ATTRIBUTES.bmcType, value: bmc?.ok ? bmc.value.type : 'unknown' },
        { key: SEARCH_ATTRIBUTES.poweredOn, value: s.status.poweredOn },
        { key: SEARCH_ATTRIBUTES.operation, value: live?.kind ?? null },
        { key: SEARCH_ATTRIBUTES.errorType, value: s.status.errorType || null },
      ];
      // What fleet operations select and cap by. A run recorded before it upserted no site (and a changed
      // pair upserts where the old code did not): the marker keeps such a run's upserts where they were.
      // patch since v0.2.0
      if (patched('site-search-attribute')) pairs.push({ key: SEARCH_ATTRIBUTES.site, value: s.spec?.site ?? DEFAULT_SITE });
      // Current details are kept in the worker's memory and read by the UI's query: no history event.
      setCurrentDetails(hostCurrentDetails(s, live));
      if (held) return;
      // An unchanged upsert still costs a history event and a visibility write;
      // skipping it is most of what the host workflow saves per operation.
      const fingerprint = JSON.stringify(pairs);
      if (fingerprint === published) return;
      published = fingerprint;
      upsertSearchAttributes(pairs);
      countEvents(1);
    },
    holdIndex: () => {
      held = true;
    },
    flushIndex: () => {
      if (!held) return;
      held = false;
      ctx.indexForSearch();
    },
    setState: (state) => {
      if (s.status.provisioning.state === state) return;
      s.status.provisioning.state = state;
      s.status.lastUpdated = now();
      ctx.indexForSearch();
    },
    provisioner: () => {
      if (provisioner) return provisioner;
      const chosen = provisionerFor(s.spec);
      // Until the host has a provisioning state its spec may still name another provisioner (specConflict).
      if (s.status.provisioning.state !== '') provisioner = chosen;
      return chosen;
    },
    writeStatus: status.writeStatus,
    historyTooLong: () => {
      const max = s.options.maxHistoryEvents;
      // The server's length and suggestion can be a task behind (history-count.ts).
      return countedPast(max) || bytesPast(s.options.maxHistoryBytes ?? DEFAULT_MAX_HISTORY_BYTES);
    },
    continueAsNewWithState: async (carry) => {
      await ctx.beforeHandOver?.();
      // A status write that cannot finish (the API server away) must not hold the hand-over: what is
      // not written yet goes to the next run, which writes it first; the run waits only for its handlers.
      const carried = status.pending() !== undefined;
      await condition(() => (carried || !status.busy()) && allHandlersFinished());
      carry?.();
      const unwritten = carried ? status.pending() : undefined;
      if (unwritten) s.statusOutbox = unwritten;
      log.info('continuing as new', { eventsCounted: eventsCounted(), bytesCounted: bytesCounted(), historyLength: workflowInfo().historyLength, historySize: workflowInfo().historySize });
      return continueAsNew<(input: HostWorkflowInput) => Promise<HostView>>({ ref: s.ref, state: s });
    },
  };
  return ctx;
}
