/**
 * A fleet operation's I/O, all of it through Temporal and the host workflows
 * (never Ironic or a BMC): select the hosts, hand each its change through
 * the host workflow's own updates (as the API does), and watch the host's
 * view until it reached the goal. Every call is idempotent: a retry, a
 * restarted worker or a new run never asks a host for the change twice.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { WorkflowNotFoundError, WorkflowUpdateFailedError, type Client, type WorkflowHandle } from '@temporalio/client';
import type { HostRef } from '../../model/host';
import { fleetSiteErrors, type FleetOperation, type FleetSelector } from '../../model/fleet';
import { formatFieldErrors } from '../../model/field-error';
import { DEFAULT_SITE } from '../../model/site';
import type { CleanRequest } from '../../model/clean';
import { hostWorkflowId } from '../../model/host-ref';
import { parseBmcAddress } from '../../model/bmc';
import { hostRun, idleHostView, markedHostRun, type HostRun } from '../../control/host-run';
import { hostSiteAttribute, runningHosts } from '../../control/host-list';
import { HostOperationLists } from '../../control/host-operations';
import {
  applyDirectivesUpdate,
  deleteHostUpdate,
  hostViewQuery,
  MAX_PAUSE_REASON,
  powerRequestsUpdate,
  requestInspectionUpdate,
  requestCleanUpdate,
  setImageUpdate,
  applySpecUpdate,
  setPausedUpdate,
  type HostView,
} from '../../contracts/host';
import { fleetPowerKey, type FleetSelection } from '../../contracts/fleet';
import { abortedResult, fleetHostResult, imageToRestore, keysToRelease, type FleetHostResult, type HostFinding } from '../../contracts/fleet-goals';
import { FLEET_CHANGE, fleetAsk, fleetChangeUpdate, fleetChangeUpdateId, type FleetChangeRequest, type FleetHostChange, type FleetViaObject } from '../../contracts/fleet-change';
import { selectionMatches, type SelectionCandidate } from '../../model/fleet-selection';
import { heartbeat, pause } from '../common/activity-context';
import { isKubeError } from '../../clients/kubernetes/kube-error';
import type { KubeRest } from '../../clients/kubernetes/kube-rest';
import { createFleetRemediation } from './remediate';
import { bareMetalHostLabels, changeBareMetalHost, pauseBareMetalHost, releaseBareMetalHostHold, restoreBareMetalHostImage } from './kubernetes';

export interface FleetHostCall {
  ref: HostRef;
  operation: FleetOperation;
  fleet: string;
  /** When the fleet started the host (workflow time). */
  since: string;
}

export type StartResult = { sent: true } | { result: FleetHostResult };
export type AwaitResult = { result: FleetHostResult } | { waiting: string };

/** How many hosts are read at once while selecting by labels. */
const READ_CONCURRENCY = 16;

async function findHost(client: Client, ref: HostRef): Promise<HostFinding> {
  return findingOf(client, ref, await hostRun(client, ref));
}

async function findingOf(client: Client, ref: HostRef, run: HostRun): Promise<HostFinding> {
  if (run.kind !== 'running') return run.kind === 'ended' ? { kind: 'ended', status: run.status } : { kind: run.kind };
  return { kind: 'running', view: await client.workflow.getHandle(hostWorkflowId(ref)).query(hostViewQuery) };
}

/**
 * Looks at a host the way a watcher does: its finding, or none while the
 * host's search attributes name an operation running (as the worker's one
 * visibility list per tick shows them, else its describe), or when its history
 * has not moved since the mark last seen: no query sent either way, `state` is
 * then theirs. At 200 hosts in flight, a query per host per look was ~40
 * workflow tasks a second for views that had not changed, and a describe per
 * host per look as many reads of the server's state; a host in an operation moves its history at each step, and
 * no fleet result holds while its operation runs: the one that ends it is
 * recorded as it stops being named (an operation failed, a host paused or
 * deleted under it included). `mark` is the mark the finding was read at, or
 * `lastMark` when none was read. A remediation's result is read from its own
 * workflow and objects (`always`): looked at every time.
 */
async function lookAtHost(
  client: Client,
  lists: HostOperationLists,
  ref: HostRef,
  lastMark: string | undefined,
  always: boolean,
): Promise<{ mark: string | undefined; state: string; found?: HostFinding }> {
  if (!always) {
    const listed = await lists.operationOf(hostWorkflowId(ref));
    if (listed && listed.operation !== '') return { mark: lastMark, state: listed.state };
  }
  const { run, mark, operation, state } = await markedHostRun(client, ref);
  if (!always && (mark === lastMark || (run.kind === 'running' && operation !== ''))) return { mark: lastMark, state };
  return { mark, state, found: await findingOf(client, ref, run) };
}

/** Runs `fn` over `items`, `limit` at a time, heartbeating as it goes. */
async function eachBounded<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++]!;
      await fn(item);
      heartbeat({ done: next });
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** A host workflow's refusal (invalid, conflict, no spec) as the host's failure; anything else is retried. */
function refusal(err: unknown): FleetHostResult | undefined {
  if (err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure) {
    return { outcome: 'failed', error: `the host refused the change (${err.cause.type ?? 'error'}): ${err.cause.message}` };
  }
  return undefined;
}

/** The API server's refusal of a change to a BareMetalHost (admission, validation) as the host's failure. */
function objectRefusal(err: unknown): FleetHostResult | undefined {
  if (isKubeError(err, 'rejected')) {
    return { outcome: 'failed', error: `the BareMetalHost refused the change: ${err.message}` };
  }
  return undefined;
}

/**
 * A `fleetChange` update's failure as the host's answer: a result, sent, the BareMetalHost to change (with what
 * the change needs of the host), or `read`: the fleet reads the host and decides itself.
 */
function fleetChangeAnswer(err: unknown): StartResult | { viaObject: FleetViaObject } | 'read' | undefined {
  if (err instanceof WorkflowNotFoundError) return 'read';
  if (!(err instanceof WorkflowUpdateFailedError) || !(err.cause instanceof ApplicationFailure)) return undefined;
  const failure = err.cause;
  switch (failure.type) {
    case FLEET_CHANGE.settled:
      return { result: failure.details?.[0] as FleetHostResult };
    case FLEET_CHANGE.wait:
      return { sent: true };
    case FLEET_CHANGE.viaObject:
      return { viaObject: (failure.details?.[0] as FleetViaObject | undefined) ?? { holds: {} } };
  }
  // A host workflow on a build without the update (a rolling upgrade): asked the way that build knows.
  if (failure.message.startsWith(`No registered handler for update: ${fleetChangeUpdate.name}`)) return 'read';
  // The host's refusal of the change itself (invalid, conflict, no spec): the host's failure.
  const refused = refusal(err);
  return refused ? { result: refused } : undefined;
}

/**
 * `rest`: the worker's own cluster (Kubernetes mode). With it, hosts driven by
 * a BareMetalHost are changed on that object (fleet-kubernetes.ts); without
 * it they are skipped. `sites`: the configured sites' names (METALFLOW_SITES_FILE),
 * which a selection by site must name; none but the default site without it.
 */
export function createFleetActivities(deps: { client?: Client; rest?: KubeRest; sites?: readonly string[] } = {}) {
  const client = (): Client => deps.client ?? Context.current().client;
  const reach = { kubernetes: deps.rest !== undefined };
  /** The host's BareMetalHost is where its changes go. */
  const viaObject = (view: HostView): KubeRest | undefined => (view.managedBy === 'kubernetes' ? deps.rest : undefined);
  /** `remediate`: each host's result is its remediation's. */
  const remediation = createFleetRemediation(deps);
  /** The hosts' running operations, one visibility list per tick for every watch on this worker (the worker's client). */
  let lists: HostOperationLists | undefined;
  const operationLists = (c: Client): HostOperationLists => (lists ??= new HostOperationLists(c));

  /** A remediation asks nothing of the host workflow: it starts one, on the BareMetalHost for a host driven by it. */
  async function startRemediation(c: Client, call: FleetHostCall & { operation: Extract<FleetOperation, { kind: 'remediate' }> }): Promise<StartResult> {
    const found = await findHost(c, call.ref);
    const settled = fleetHostResult(call.operation, found, call.since, call.fleet, reach);
    if (settled) return { result: settled };
    if (found.kind !== 'running') return { sent: true };
    try {
      await remediation.start(call, viaObject(found.view));
    } catch (err) {
      const refused = objectRefusal(err);
      if (refused) return { result: refused };
      throw err;
    }
    return { sent: true };
  }

  /** The change written on the host's BareMetalHost (activities/fleet/kubernetes.ts); the API server's refusal is the host's failure. */
  async function changeObject(rest: KubeRest, call: FleetHostCall & { operation: FleetHostChange }, holds: Record<string, unknown>): Promise<StartResult> {
    try {
      await changeBareMetalHost(rest, call.ref, call.operation, call.fleet, holds);
    } catch (err) {
      const refused = objectRefusal(err);
      if (refused) return { result: refused };
      throw err;
    }
    return { sent: true };
  }

  /**
   * The ask decided from a read of the host (fleetAsk on its queried view): for a host workflow that
   * predates `fleetChange` (the change goes by the update that build knows, or to the BareMetalHost),
   * and a host whose workflow does not run.
   */
  async function readAndAsk(c: Client, call: FleetHostCall & { operation: FleetHostChange }): Promise<StartResult> {
    const found = await findHost(c, call.ref);
    if (found.kind !== 'running') return { result: fleetHostResult(call.operation, found, call.since, call.fleet, reach) ?? { outcome: 'skipped', reason: `the host's workflow is ${found.kind}` } };
    const { view } = found;
    const op = call.operation;
    const ask = fleetAsk(op, view, call.since, call.fleet, reach);
    if (ask.kind === 'settled') return { result: ask.result };
    if (ask.kind === 'wait') return { sent: true };
    const rest = viaObject(view);
    if (ask.kind === 'viaObject' || rest) {
      if (!rest) return { result: { outcome: 'skipped', reason: 'the host is driven by its BareMetalHost and this worker has no Kubernetes API server to change it' } };
      return changeObject(rest, call, view.power.holds);
    }
    try {
      await sendChange(c.workflow.getHandle(hostWorkflowId(call.ref)), op, call.fleet, view);
    } catch (err) {
      const refused = refusal(err);
      if (refused) return { result: refused };
      throw err;
    }
    return { sent: true };
  }

  return {
    /**
     * The hosts the selector names, read once at the fleet's start. Labels are read from each host's view;
     * with `sites` (the fleet selects by site or caps each site), so is the site of a host whose run has not
     * indexed it (begun before hosts set MetalflowSite: such a host may be of any site).
     */
    async selectFleetHosts(selector: FleetSelector, opts: { sites?: boolean; operation?: FleetOperation } = {}): Promise<FleetSelection> {
      // A `temporal workflow start` input meets the configured sites here: the workflow cannot read them.
      const unknown = fleetSiteErrors(selector, deps.sites ?? [], opts.operation);
      if (unknown.length > 0) throw ApplicationFailure.create({ type: 'InvalidFleetInput', nonRetryable: true, message: formatFieldErrors(unknown), details: [unknown] });
      const c = client();
      const withSites = opts.sites === true || selector.sites !== undefined;
      const candidates: SelectionCandidate[] = [];
      const missing: HostRef[] = [];
      const needsView = selector.labelSelector !== undefined;
      const refs: HostRef[] = [];
      if (selector.hosts) {
        // A host named twice is one host.
        refs.push(...new Map(selector.hosts.map((r) => [`${r.namespace}/${r.name}`, r])).values());
      } else {
        const filter = { namespace: selector.namespace, states: selector.states, sites: selector.sites };
        for await (const { item, info } of runningHosts(c, filter)) {
          const ref = { namespace: item.namespace, name: item.name };
          const site = withSites ? hostSiteAttribute(info.searchAttributes) : undefined;
          if (needsView || (withSites && site === undefined)) refs.push(ref);
          else candidates.push({ ref, provisioningState: item.provisioningState, bmcType: item.bmcType, ...(site !== undefined ? { site } : {}) });
        }
      }
      await eachBounded(refs, READ_CONCURRENCY, async (ref) => {
        const found = await findHost(c, ref);
        if (found.kind === 'absent' || found.kind === 'deleted') {
          missing.push(ref);
          return;
        }
        const view = found.kind === 'running' ? found.view : undefined;
        const bmc = view?.spec?.bmc?.address;
        // A BareMetalHost's labels are on the object, not in its workflow.
        const rest = view ? viaObject(view) : undefined;
        const labels = needsView ? (rest ? await bareMetalHostLabels(rest, ref) : view?.labels) : undefined;
        candidates.push({
          ref,
          provisioningState: view ? view.status.provisioning.state || 'unmanaged' : `workflow ${found.kind === 'ended' ? found.status : ''}`,
          bmcType: bmc ? bmcTypeOf(bmc) : 'unknown',
          labels,
          ...(withSites ? { site: view?.spec?.site ?? DEFAULT_SITE } : {}),
        });
      });
      const key = (r: HostRef) => `${r.namespace}/${r.name}`;
      const hosts = candidates
        .filter((h) => selectionMatches(h, selector))
        .sort((a, b) => key(a.ref).localeCompare(key(b.ref)))
        .map(({ ref, provisioningState, bmcType, site }) => ({ ref, provisioningState, bmcType, ...(withSites ? { site: site ?? DEFAULT_SITE } : {}) }));
      return { at: new Date().toISOString(), hosts, missing: missing.sort((a, b) => key(a).localeCompare(key(b))) };
    },

    /**
     * Hands the host its change, unless it is already done, already asked for, or cannot be done: one
     * `fleetChange` update, whose validator decides that from the host's own state (contracts/fleet-change.ts),
     * with an id per fleet, host and start, so a retried call is answered, not applied again. A host driven by
     * its BareMetalHost refuses it with what the object's change needs, and the object is changed. The host is
     * read first only for a remediation, a host workflow that predates the update, or one that is not running.
     */
    async startFleetChange(call: FleetHostCall): Promise<StartResult> {
      const c = client();
      const op = call.operation;
      if (op.kind === 'remediate') return startRemediation(c, { ...call, operation: op });
      const request: FleetChangeRequest = { fleet: call.fleet, operation: op, since: call.since, ...(reach.kubernetes ? { kubernetes: true } : {}) };
      try {
        await c.workflow
          .getHandle(hostWorkflowId(call.ref))
          .executeUpdate(fleetChangeUpdate, { args: [request], updateId: fleetChangeUpdateId(call.fleet, call.ref, op.kind, call.since) });
        return { sent: true };
      } catch (err) {
        const answered = fleetChangeAnswer(err);
        if (answered === 'read') return readAndAsk(c, { ...call, operation: op });
        if (answered && 'viaObject' in answered) return deps.rest ? changeObject(deps.rest, { ...call, operation: op }, answered.viaObject.holds) : readAndAsk(c, { ...call, operation: op });
        if (answered) return answered;
        // Not an answer of the host's (a timeout, an unavailable server): retried, unless its run is not running at all.
        if ((await hostRun(c, call.ref)).kind === 'running') throw err;
        return readAndAsk(c, { ...call, operation: op });
      }
    },

    /** Watches the host until it reached the goal, failed or cannot go on, or until `windowMs` has passed. */
    async awaitFleetHost(call: FleetHostCall & { windowMs: number }): Promise<AwaitResult> {
      const c = client();
      const until = Date.now() + call.windowMs;
      let delay = 500;
      let mark: string | undefined;
      let state = '';
      const op = call.operation;
      for (;;) {
        const look = await lookAtHost(c, operationLists(c), call.ref, mark, op.kind === 'remediate');
        mark = look.mark;
        const { found } = look;
        if (!found && look.state) state = look.state;
        if (found) {
          const result =
            op.kind === 'remediate'
              ? await remediation.result({ ...call, operation: op }, found.kind === 'running' ? viaObject(found.view) : undefined)
              : fleetHostResult(op, found, call.since, call.fleet, reach);
          if (result) return { result };
          state = found.kind === 'running' ? found.view.status.provisioning.state || 'unmanaged' : found.kind;
        }
        if (Date.now() + delay > until) return { waiting: state };
        heartbeat({ state });
        await pause(delay);
        delay = Math.min(delay * 1.5, 5000);
      }
    },

    /**
     * Stops a host in flight (cancel with abortInFlight) the way the host
     * workflow stops its own operations: the host is paused, which cancels
     * a running inspect, prepare, provision, power change or reboot (Ironic is
     * asked to stop too) and starts nothing until unpaused, a deprovision or
     * a delete's next step included (one already running, half a teardown
     * being no state to leave a host in, ends first). Waits until no
     * operation runs, then reads how the fleet's operation ended; a
     * deprovision that never ran gets its image back. Pausing twice with the
     * same reason changes nothing: safe to retry.
     */
    async abortFleetHost(call: FleetHostCall & { reason?: string }): Promise<FleetHostResult> {
      const c = client();
      const why = `fleet operation ${call.fleet} aborted${call.reason ? `: ${call.reason}` : ''}`.slice(0, MAX_PAUSE_REASON);
      const first = await findHost(c, call.ref);
      // Paused by this very abort (a retried call): not a host the fleet found paused.
      const ours = first.kind === 'running' && first.view.paused?.reason === why;
      const settled = ours ? undefined : fleetHostResult(call.operation, first, call.since, call.fleet, reach);
      if (settled) return settled;
      const handle = c.workflow.getHandle(hostWorkflowId(call.ref));
      const rest = first.kind === 'running' ? viaObject(first.view) : undefined;
      if (rest) await pauseBareMetalHost(rest, call.ref, why);
      else await handle.executeUpdate(setPausedUpdate, { args: [{ paused: true, reason: why }] });
      let delay = 500;
      let seen: string | undefined;
      for (;;) {
        // Until no operation runs: described at each poll, queried only when that could answer (the host
        // in flight runs local activities; a query that meets one is docs/adr/0006-local-activity-heartbeat.md).
        const look = await idleHostView(c, call.ref, seen);
        if (look.run.kind !== 'running') {
          const found = await findingOf(c, call.ref, look.run);
          return fleetHostResult(call.operation, found, call.since, call.fleet, reach) ?? { outcome: 'skipped', reason: `the host's workflow is ${found.kind}` };
        }
        const view = look.view;
        if (view) seen = look.mark;
        if (view && !view.currentOperation) {
          const found = { kind: 'running' as const, view };
          const result = abortedResult(call.operation, found, call.since, call.fleet, why);
          const image = result.outcome === 'cancelled' ? imageToRestore(call.operation, view) : undefined;
          if (!image) return result;
          try {
            if (rest) await restoreBareMetalHostImage(rest, call.ref, image);
            else await handle.executeUpdate(setImageUpdate, { args: [image] });
          } catch (err) {
            const refused = refusal(err) ?? objectRefusal(err);
            if (refused) return { outcome: 'cancelled', reason: `deprovision cancelled before it ran (${why}); its image could not be put back (${refused.outcome === 'failed' ? refused.error : ''}): the host would deprovision once unpaused` };
            throw err;
          }
          return { outcome: 'cancelled', reason: `deprovision cancelled before it ran (${why}): its image ${image.url} is back in its spec, nothing changed on the host` };
        }
        heartbeat({ running: view?.currentOperation?.kind ?? look.operation });
        await pause(delay);
        delay = Math.min(delay * 1.5, 5000);
      }
    },

    /** A cancelled powerOff fleet lets its hosts power on again: its key is released wherever it is held. */
    async releaseFleetHolds(input: { refs: HostRef[]; fleet: string }): Promise<number> {
      const c = client();
      const key = fleetPowerKey(input.fleet);
      let released = 0;
      await eachBounded(input.refs, READ_CONCURRENCY, async (ref) => {
        const found = await findHost(c, ref);
        if (found.kind !== 'running' || !(key in found.view.power.holds)) return;
        const rest = viaObject(found.view);
        if (rest) await releaseBareMetalHostHold(rest, ref, key);
        else await c.workflow.getHandle(hostWorkflowId(ref)).executeUpdate(powerRequestsUpdate, { args: [{ release: [key] }] });
        released += 1;
      });
      return released;
    },
  };
}

/** The change by the host workflow's own update for it, as a build without `fleetChange` takes it. */
async function sendChange(handle: WorkflowHandle, op: FleetHostChange, fleet: string, view: HostView): Promise<void> {
  switch (op.kind) {
    case 'reboot':
      await handle.executeUpdate(powerRequestsUpdate, { args: [{ reboot: { mode: op.mode ?? 'soft' } }] });
      return;
    case 'powerOff':
      await handle.executeUpdate(powerRequestsUpdate, { args: [{ holdOff: { [fleetPowerKey(fleet)]: op.mode ?? 'soft' } }] });
      return;
    case 'powerOn':
      await handle.executeUpdate(powerRequestsUpdate, { args: [{ release: keysToRelease(op, view.power.holds) }] });
      return;
    case 'provision':
      await handle.executeUpdate(setImageUpdate, { args: [op.image] });
      return;
    case 'deprovision':
      await handle.executeUpdate(setImageUpdate, { args: [null] });
      return;
    case 'delete':
      await handle.executeUpdate(deleteHostUpdate);
      return;
    case 'reinspect':
      await handle.executeUpdate(requestInspectionUpdate);
      return;
    // An API host's directives hold only what the fleet gives them (the shim's hosts are skipped): the whole set is replaced.
    case 'detach':
      await handle.executeUpdate(applyDirectivesUpdate, { args: [{ detached: { deleteAction: op.deleteAction ?? 'delete', force: op.force ?? false } }] });
      return;
    case 'attach':
      await handle.executeUpdate(applyDirectivesUpdate, { args: [{}] });
      return;
    case 'moveSite':
      // The host's own spec with the new site: a registered host moves (its refusal, a 409's reason, is the host's result).
      if (view.spec) await handle.executeUpdate(applySpecUpdate, { args: [{ ...view.spec, site: op.site }] });
      return;
    case 'clean':
      await handle.executeUpdate(requestCleanUpdate, { args: [{ steps: op.steps as CleanRequest['steps'] }] });
      return;
  }
}

function bmcTypeOf(address: string): string {
  const parsed = parseBmcAddress(address);
  return parsed.ok ? parsed.value.type : 'unknown';
}
