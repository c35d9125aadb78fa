/**
 * A fleet operation's I/O, all of it through Temporal and the host workflows
 * (never Ironic or a BMC): select the hosts, hand each its change through
 * the host workflow's own updates (as the API does), and watch the host's
 * view until it reached the goal. Every call is idempotent: a retry, a
 * restarted worker or a new run never asks a host for the change twice.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import type { HostRef } from '../../model/host';
import { fleetSiteErrors, type FleetOperation, type FleetSelector } from '../../model/fleet';
import { formatFieldErrors } from '../../model/field-error';
import { DEFAULT_SITE } from '../../model/site';
import type { CleanRequest } from '../../model/clean';
import { hostWorkflowId } from '../../model/host-ref';
import { parseBmcAddress } from '../../model/bmc';
import { hostRun, idleHostView, markedHostRun, type HostRun } from '../../control/host-run';
import { hostSiteAttribute, runningHosts } from '../../control/host-list';
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
 * Looks at a host the way a watcher does: its finding, or `unchanged` when
 * its history has not moved since the mark last seen (no query sent). At 200
 * hosts in flight, a query per host per look was ~40 workflow tasks a second
 * for views that had not changed (1,000-host fleet run 8229ad).
 */
async function lookAtHost(client: Client, ref: HostRef, lastMark: string | undefined): Promise<{ mark: string; found?: HostFinding }> {
  const { run, mark } = await markedHostRun(client, ref);
  if (mark === lastMark) return { mark };
  return { mark, found: await findingOf(client, ref, run) };
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

    /** Hands the host its change, unless it is already done, already asked for, or cannot be done. */
    async startFleetChange(call: FleetHostCall): Promise<StartResult> {
      const c = client();
      const found = await findHost(c, call.ref);
      const settled = fleetHostResult(call.operation, found, call.since, call.fleet, reach);
      // An attached host may still have a detach waiting for its state (invisible in its view): attach withdraws it all the same.
      const withdraw = call.operation.kind === 'attach' && settled?.outcome === 'succeeded';
      if (settled && !withdraw) return { result: settled };
      if (found.kind !== 'running') return { sent: true };
      const { view } = found;
      const handle = c.workflow.getHandle(hostWorkflowId(call.ref));
      const op = call.operation;
      const rest = viaObject(view);
      if (op.kind === 'remediate') {
        try {
          await remediation.start({ ...call, operation: op }, rest);
        } catch (err) {
          const refused = objectRefusal(err);
          if (refused) return { result: refused };
          throw err;
        }
        return { sent: true };
      }
      if (rest) {
        // A reboot waiting, or one run since the fleet started the host, is this one (a retried call).
        if (op.kind === 'reboot' && (view.power.reboot || view.operations.some((o) => o.kind === 'reboot' && o.startedAt >= call.since))) return { sent: true };
        try {
          await changeBareMetalHost(rest, call.ref, op, call.fleet, view);
        } catch (err) {
          const refused = objectRefusal(err);
          if (refused) return { result: refused };
          throw err;
        }
        return { sent: true };
      }
      try {
        switch (op.kind) {
          case 'reboot':
            // A reboot waiting, or one run since the fleet started the host, is this one (a retried call).
            if (view.power.reboot || view.operations.some((o) => o.kind === 'reboot' && o.startedAt >= call.since)) return { sent: true };
            await handle.executeUpdate(powerRequestsUpdate, { args: [{ reboot: { mode: op.mode ?? 'soft' } }] });
            break;
          case 'powerOff':
            await handle.executeUpdate(powerRequestsUpdate, { args: [{ holdOff: { [fleetPowerKey(call.fleet)]: op.mode ?? 'soft' } }] });
            break;
          case 'powerOn': {
            const keys = keysToRelease(op, view.power.holds);
            if (keys.length > 0) await handle.executeUpdate(powerRequestsUpdate, { args: [{ release: keys }] });
            break;
          }
          case 'provision':
            await handle.executeUpdate(setImageUpdate, { args: [op.image] });
            break;
          case 'deprovision':
            await handle.executeUpdate(setImageUpdate, { args: [null] });
            break;
          case 'delete':
            await handle.executeUpdate(deleteHostUpdate);
            break;
          case 'reinspect':
            await handle.executeUpdate(requestInspectionUpdate);
            break;
          // An API host's directives hold only what the fleet gives them (the shim's hosts are skipped): the whole set is replaced.
          case 'detach':
            await handle.executeUpdate(applyDirectivesUpdate, { args: [{ detached: { deleteAction: op.deleteAction ?? 'delete', force: op.force ?? false } }] });
            break;
          case 'attach':
            await handle.executeUpdate(applyDirectivesUpdate, { args: [{}] });
            break;
          case 'moveSite':
            // The host's own spec with the new site: a registered host moves (its refusal, a 409's reason, is the host's result).
            if (!view.spec) return { sent: true };
            await handle.executeUpdate(applySpecUpdate, { args: [{ ...view.spec, site: op.site }] });
            break;
          case 'clean':
            // A request held, or a clean run since the fleet started the host, is this one (a retried call).
            if (view.cleanRequest || view.operations.some((o) => o.kind === 'clean' && o.startedAt >= call.since)) return { sent: true };
            await handle.executeUpdate(requestCleanUpdate, { args: [{ steps: op.steps as CleanRequest['steps'] }] });
            break;
        }
      } catch (err) {
        const refused = refusal(err);
        if (refused) return { result: refused };
        throw err;
      }
      return { sent: true };
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
        // A remediation's result is read from its own workflow and objects, not the host's history: looked at every time.
        const look = await lookAtHost(c, call.ref, op.kind === 'remediate' ? undefined : mark);
        mark = look.mark;
        const { found } = look;
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

function bmcTypeOf(address: string): string {
  const parsed = parseBmcAddress(address);
  return parsed.ok ? parsed.value.type : 'unknown';
}
