/**
 * Writing a host's status (and its Events) back to its BareMetalHost, when the
 * Kubernetes shim drives the host. The write runs beside the host's work: an API server outage must not hold the host's
 * state machine, and status catches up when it returns.
 *
 * A run writes through its worker's status writer (a sink, activities/kubernetes/status-writer.ts): no history
 * events, no workflow task waits for it, and the last status wins. Runs recorded before that (patch
 * `status-by-worker`) keep their background activity, one write at a time.
 */
import { ActivityFailure, ApplicationFailure, condition, log, patched, proxyActivities, proxySinks, sleep, workflowInfo } from '@temporalio/workflow';
import { failureMessage } from '../common/failure-message';
import { ACTIVITY_OPTIONS } from '../common/activity-options';
import type { HostState, StatusOutbox } from '../../contracts/host';
import type { KubernetesActivities } from '../../activities/kubernetes/host-status';
import type { HostStatusSinks } from '../../activities/kubernetes/status-writer';
import type { HostEvent } from '../../model/host-event';
import type { SiteReading } from '../../model/conditions';
import { DEFAULT_SITE } from '../../model/site';
import { statusWriteOrder } from '../../model/status-order';
import { siteUnreachable } from './site-route';
import { homeSite } from './rules/site';

/**
 * Status publishing in the background: retried while the API server is away
 * (the server retries; no history per attempt), while the host's own work goes
 * on. A rejected write (4xx) is not retried. The attempts are capped: a write
 * that waited for ever would hold a host's run, and a worker that answered it with
 * "not registered" kept it retrying for ever.
 */
const kubeBackground = proxyActivities<KubernetesActivities>(ACTIVITY_OPTIONS.kubernetesWrite);

/** The worker's status writer: called when the workflow task completes, never on replay. */
const { hostStatus } = proxySinks<HostStatusSinks>();

/** Events kept for a status write still waiting on the API server; the oldest go first. */
const MAX_QUEUED_EVENTS = 50;

/**
 * After a write's attempts ran out (about 4 minutes), the next round starts this much later:
 * a timer and one activity per round in history, however long the API server stays away.
 */
const RETRY_ROUND_PAUSE = '2 minutes';

export interface StatusPublisher {
  /** Publishes the whole status (and an Event); a no-op for hosts not driven by the shim. */
  writeStatus(event?: HostEvent): Promise<void>;
  /** A background write is in flight. */
  busy(): boolean;
  /** What is not known to be on the BareMetalHost yet (a write in flight or waiting), for the next run; none when all is written. */
  pending(): StatusOutbox | undefined;
}

/** The write ran out of attempts or time (the API server away), as opposed to being refused. */
function mayPass(err: unknown): boolean {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return !(cause instanceof ApplicationFailure && cause.nonRetryable);
}

/**
 * A host of a configured site: its site and whether the site leaves its calls unstarted (site-route.ts),
 * for the BareMetalHost's `SiteReachable` condition. Nothing for a host of the default site, whose work
 * the central workers run. (An activity's input is not compared on replay: runs recorded without it replay.)
 */
function siteReading(s: HostState): { site?: SiteReading } {
  const name = homeSite(s);
  // A host moved to the default site loses the condition its old site gave it; any other host of the default site has none.
  if (!name || name === DEFAULT_SITE) return s.operations.some((o) => o.kind === 'move') ? { site: { name: DEFAULT_SITE } } : {};
  const dark = siteUnreachable();
  return { site: { name, ...(dark ? { unreachable: { since: dark.since, reason: dark.reason } } : {}) } };
}

/**
 * Writes through the worker's status writer. Each write carries the whole status (level-triggered: the last
 * one wins); its Events are named by run and write, so a workflow task run again names them alike and they are
 * recorded once. A write the worker could not finish (the process ended) is sent again by the first task of
 * the run a worker rebuilds from history: a sink is not called while the rebuild replays.
 */
function workerStatusPublisher(s: HostState): StatusPublisher {
  /** Writes with Events made by this run: each Event's name is seeded by it. */
  let writes = 0;
  /** Every write of this run, numbered for its place in the host's order (model/status-order.ts). */
  let sent = 0;
  const send = (events: HostEvent[]): void => {
    const { workflowId, runId } = workflowInfo();
    const seq = events.length > 0 ? ++writes : writes;
    hostStatus.write({
      ref: s.ref,
      status: s.status,
      events: events.map((event, i) => ({ seed: `${workflowId}/${runId}/${seq}/${i}`, event })),
      // Workflow time: the same on every worker that runs this task, later for every later task. Not history (a sink).
      order: statusWriteOrder(Date.now(), ++sent),
      ...siteReading(s),
    });
  };
  // What the previous run left unwritten (a run of the activity path), then, whenever a worker builds this run
  // (its start, or a rebuild after a worker lost it), the status as it stands: the writes of the last worker may
  // not have arrived. A condition, not a timer: no command, nothing in history.
  const carried = s.statusOutbox?.events ?? [];
  delete s.statusOutbox;
  void condition(() => !workflowInfo().unsafe.isReplaying).then(() => {
    if (carried.length > 0 || s.status.provisioning.state !== '' || s.status.provisioning.ID !== '') send(carried.splice(0));
  });
  return {
    writeStatus: async (event) => {
      if (!s.options.publishStatus) return;
      send(event ? [event] : []);
    },
    busy: () => false,
    pending: () => undefined,
  };
}

export function statusPublisher(s: HostState): StatusPublisher {
  // Decided once, at the run's start: a run recorded with the activity path replays it to its end.
  // patch since v0.2.0
  if (s.options.publishStatus && patched('status-by-worker')) return workerStatusPublisher(s);
  return activityStatusPublisher(s);
}

function activityStatusPublisher(s: HostState): StatusPublisher {
  /** One status write at a time; what changes meanwhile goes out with the next one. */
  const outbox = { busy: false, dirty: false, events: [] as HostEvent[], inFlight: [] as HostEvent[] };
  const queue = (events: HostEvent[]): void => {
    outbox.events = [...events, ...outbox.events].slice(-MAX_QUEUED_EVENTS);
  };
  /**
   * The inventory (its JSON) last written to the BareMetalHost by this run: a write leaves an
   * unchanged one out. Each write's input is history, and a real server's inventory is hundreds
   * of KB: sent whole with every transition, an error loop grew its history by that per retry.
   */
  let hardwareWritten: string | undefined;
  const drainOutbox = async (): Promise<void> => {
    outbox.busy = true;
    try {
      while (outbox.dirty) {
        outbox.dirty = false;
        const events = outbox.events.splice(0);
        outbox.inFlight = events;
        const hardware = s.status.hardware ? JSON.stringify(s.status.hardware) : undefined;
        const kept = hardware !== undefined && hardware === hardwareWritten;
        try {
          const { hardware: _left, ...rest } = s.status;
          const written = await kubeBackground.publishHostStatus({ ref: s.ref, status: kept ? rest : s.status, events, ...(kept ? { hardwareKept: true } : {}), ...siteReading(s) });
          outbox.inFlight = [];
          if (written.hardwareMissing) {
            // The object lost it (re-created, or its status cleared): written whole next.
            hardwareWritten = undefined;
            outbox.dirty = true;
          } else if (written.published) hardwareWritten = hardware;
        } catch (err) {
          outbox.inFlight = [];
          log.warn('could not publish host status', { error: failureMessage(err) });
          if (mayPass(err)) {
            // The API server is still away: this round's Events go with the next round, after a pause.
            queue(events);
            outbox.dirty = true;
            await sleep(RETRY_ROUND_PAUSE);
          }
        }
      }
    } finally {
      outbox.busy = false;
    }
  };

  const writeStatus = async (event?: HostEvent): Promise<void> => {
    if (!s.options.publishStatus) return;
    // Never awaited: an API server outage must not hold the host's state machine.
    if (event) outbox.events = [...outbox.events, event].slice(-MAX_QUEUED_EVENTS);
    outbox.dirty = true;
    if (!outbox.busy) void drainOutbox();
  };

  // Handed over by the previous run with a write unfinished: written first.
  if (s.statusOutbox) {
    queue(s.statusOutbox.events);
    delete s.statusOutbox;
    outbox.dirty = true;
    void drainOutbox();
  }

  return {
    writeStatus,
    busy: () => outbox.busy,
    pending: () =>
      outbox.busy || outbox.dirty ? { events: [...outbox.inFlight, ...outbox.events].slice(-MAX_QUEUED_EVENTS) } : undefined,
  };
}
