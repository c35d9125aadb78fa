/**
 * The worker process's writer of BareMetalHost status, fed by the host workflows through a sink
 * (`hostStatus.write`): no activity, so no history events, and nothing in a workflow task or an
 * update's answer waits for the API server. A sink call is handed over when the workflow task
 * that made it completes; this module only queues it and returns.
 *
 * Level-triggered: each call carries the host's whole status, the last one per host wins, and its
 * Events queue behind it. One write per host at a time, a bounded number at once for the process;
 * a write the API server does not take is sent again (doubling pauses, while the process lives),
 * with whatever status is newest by then. A write lost with the process is sent again by the
 * workflow when a worker next rebuilds it (workflows/host/status-publish.ts). A write older than
 * the one the object holds (another worker's, once the workflow moved there) is not made; its
 * Events still are (model/status-order.ts).
 */
import { createHash } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/activity';
import type { Sinks, WorkflowInfo } from '@temporalio/workflow';
import type { HostRef, HostStatus } from '../../model/host';
import type { HostEvent } from '../../model/host-event';
import type { SiteReading } from '../../model/conditions';
import type { HostStatusPublish, KnownHostObject } from './host-status';

/** One write as the workflow hands it over. */
export interface HostStatusWrite {
  ref: HostRef;
  status: HostStatus;
  /** The Events of this write, each with a name seed unique to its run and write: a task run again names them alike. */
  events: { seed: string; event: HostEvent }[];
  /** A host of a configured site: its `SiteReachable` condition. */
  site?: SiteReading;
  /**
   * The write's place in the host's order (model/status-order.ts): not made over a later one the object holds,
   * which another worker wrote after the workflow moved there while this one still retried.
   */
  order?: string;
}

/** The sink the host workflow calls (proxySinks<HostStatusSinks>()). */
export interface HostStatusSinks extends Sinks {
  hostStatus: { write(write: HostStatusWrite): void };
}

/** Events kept per host while its writes wait on the API server; the oldest go first. */
const MAX_QUEUED_EVENTS = 50;
const FIRST_RETRY_MS = 1000;
const MAX_RETRY_MS = 60_000;
/** Writes in flight at once for the process (each a PATCH, a GET first when the object changed since this process's last write, an Event POST each). */
export const DEFAULT_STATUS_WRITES_AT_ONCE = 16;

interface HostEntry {
  ref: HostRef;
  /** The newest status not written yet, with its Events; none when all is written. */
  next?: { status: HostStatus; site?: SiteReading; order?: string; events: { seed: string; event: HostEvent }[] };
  writing: boolean;
  /** `status.hardware` as last written to this object by this process (a hash of its JSON): left out while unchanged. */
  hardwareWritten?: string;
  /**
   * The object as this process's last write to it answered: the next write goes against it without reading the
   * object first (one GET a write saved); a change by anyone else meanwhile makes the write read it again.
   */
  known?: KnownHostObject;
  retryMs: number;
  timer?: NodeJS.Timeout;
}

export interface HostStatusWriter {
  write(write: HostStatusWrite): void;
  /** Hosts with a write waiting or in flight. */
  pending(): number;
  /** Stops the retries' timers; what is not written is dropped (the workflow sends it again when rebuilt). */
  close(): void;
}

export function createHostStatusWriter(deps: {
  /** createHostStatusPublish's (an activity's publishHostStatus serves too: it keeps no object, so every write reads first). */
  publish: (input: Parameters<HostStatusPublish>[0]) => Promise<{ published: boolean; hardwareMissing?: true; known?: KnownHostObject }>;
  log: { warn(message: string, meta?: Record<string, unknown>): void };
  atOnce?: number;
}): HostStatusWriter {
  const atOnce = deps.atOnce ?? DEFAULT_STATUS_WRITES_AT_ONCE;
  const hosts = new Map<string, HostEntry>();
  /** Hosts with a write ready to go, in the order they became ready. */
  const ready = new Set<string>();
  let inFlight = 0;
  let closed = false;

  const pump = (): void => {
    while (!closed && inFlight < atOnce && ready.size > 0) {
      const key = ready.values().next().value as string;
      ready.delete(key);
      const entry = hosts.get(key);
      if (!entry?.next || entry.writing || entry.timer) continue;
      void send(key, entry);
    }
  };

  const makeReady = (key: string, entry: HostEntry): void => {
    if (entry.writing || entry.timer) return;
    ready.add(key);
  };

  /** `next` goes out again before whatever newer status came meanwhile; its Events first. */
  const requeue = (entry: HostEntry, next: NonNullable<HostEntry['next']>): void => {
    const newer = entry.next;
    entry.next = newer ? { ...newer, events: [...next.events, ...newer.events].slice(-MAX_QUEUED_EVENTS) } : next;
  };

  async function send(key: string, entry: HostEntry): Promise<void> {
    const next = entry.next!;
    entry.next = undefined;
    entry.writing = true;
    inFlight++;
    // A hash, not the inventory: the process keeps one per host it has written.
    const hardware = next.status.hardware ? createHash('sha256').update(JSON.stringify(next.status.hardware)).digest('hex') : undefined;
    const kept = hardware !== undefined && hardware === entry.hardwareWritten;
    let again = false;
    try {
      const { hardware: _left, ...rest } = next.status;
      const known = entry.known;
      entry.known = undefined;
      const written = await deps.publish({ ref: entry.ref, status: kept ? rest : next.status, namedEvents: next.events, ...(kept ? { hardwareKept: true } : {}), ...(next.site ? { site: next.site } : {}), ...(next.order ? { order: next.order } : {}), ...(known ? { known } : {}) });
      entry.known = written.known;
      entry.retryMs = FIRST_RETRY_MS;
      if (written.hardwareMissing) {
        // Nothing was written: the object lost its hardware (re-created, or its status cleared). Sent whole at once.
        entry.hardwareWritten = undefined;
        requeue(entry, next);
      } else if (written.published) entry.hardwareWritten = hardware;
    } catch (err) {
      const refused = err instanceof ApplicationFailure && err.nonRetryable;
      // Said once per host while the API server stays away (a thousand hosts retry each minute).
      if (refused || entry.retryMs === FIRST_RETRY_MS) deps.log.warn(refused ? 'the API server refused a host status write; not sent again' : 'could not write host status; sending it again', {
        host: `${entry.ref.namespace}/${entry.ref.name}`,
        error: err instanceof Error ? err.message : String(err),
      });
      if (!refused) {
        // A newer status replaces this one; this one's Events go first.
        requeue(entry, next);
        again = true;
      }
    } finally {
      entry.writing = false;
      inFlight--;
    }
    if (again && !closed) {
      const ms = entry.retryMs;
      entry.retryMs = Math.min(ms * 2, MAX_RETRY_MS);
      entry.timer = setTimeout(() => {
        entry.timer = undefined;
        makeReady(key, entry);
        pump();
      }, ms);
      entry.timer.unref();
    } else if (entry.next) makeReady(key, entry);
    pump();
  }

  return {
    write: (w) => {
      if (closed) return;
      const key = `${w.ref.namespace}/${w.ref.name}`;
      let entry = hosts.get(key);
      if (!entry) {
        entry = { ref: w.ref, writing: false, retryMs: FIRST_RETRY_MS };
        hosts.set(key, entry);
      }
      const events = [...(entry.next?.events ?? []), ...w.events].slice(-MAX_QUEUED_EVENTS);
      entry.next = { status: w.status, ...(w.site ? { site: w.site } : {}), ...(w.order ? { order: w.order } : {}), events };
      makeReady(key, entry);
      pump();
    },
    pending: () => [...hosts.values()].filter((e) => e.next || e.writing).length,
    close: () => {
      closed = true;
      for (const entry of hosts.values()) if (entry.timer) clearTimeout(entry.timer);
      hosts.clear();
      ready.clear();
    },
  };
}

/** The sinks a worker registers: each call queued to `writer` (never awaited: the workflow task is not held). */
export function hostStatusSinks(writer: HostStatusWriter | undefined, log: { warn(message: string, meta?: Record<string, unknown>): void }) {
  return {
    hostStatus: {
      write: {
        fn: (_info: WorkflowInfo, w: HostStatusWrite): void => {
          // A copy: the workflow's state object changes with its next task, while this write may still wait.
          if (writer) writer.write(JSON.parse(JSON.stringify(w)) as HostStatusWrite);
          else log.warn('cannot write the status of a BareMetalHost: this worker has no Kubernetes API server configured (METALFLOW_KUBECONFIG, or a pod\'s service account); run Kubernetes-mode hosts on workers that have one', { host: `${w.ref.namespace}/${w.ref.name}` });
        },
        callDuringReplay: false,
      },
    },
  };
}
