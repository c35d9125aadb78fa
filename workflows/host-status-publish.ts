/**
 * Writing a host's status (and its Events) back to its BareMetalHost, when the
 * Kubernetes shim drives the host. Since `background-status-publish` the write
 * runs beside the host's work: an API server outage must not hold the host's
 * state machine, and status catches up when it returns.
 */
import { log, proxyActivities } from '@temporalio/workflow';
import { since } from './versions';
import { failureMessage } from './failure-message';
import type { HostState } from './definitions';
import type { HostEvent, KubernetesActivities } from '../activities/host-status-activities';

const kube = proxyActivities<KubernetesActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 10 },
});

/**
 * Status publishing in the background: retried for as long as the API server
 * is away (the server retries; no history per attempt), while the host's own
 * work goes on. A rejected write (4xx) is not retried.
 */
const kubeBackground = proxyActivities<KubernetesActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

/** Events kept for a status write still waiting on the API server; the oldest go first. */
const MAX_QUEUED_EVENTS = 50;

export interface StatusPublisher {
  /** Publishes the whole status (and an Event); a no-op for hosts not driven by the shim. */
  sync(event?: HostEvent): Promise<void>;
  /** A background write is in flight. */
  busy(): boolean;
}

export function statusPublisher(s: HostState): StatusPublisher {
  /** One status write at a time; what changes meanwhile goes out with the next one. */
  const outbox = { busy: false, dirty: false, events: [] as HostEvent[] };
  const drainOutbox = async (): Promise<void> => {
    outbox.busy = true;
    try {
      while (outbox.dirty) {
        outbox.dirty = false;
        const events = outbox.events.splice(0);
        try {
          await kubeBackground.publishHostStatus({ ref: s.ref, status: s.status, events });
        } catch (err) {
          log.warn('could not publish host status', { error: failureMessage(err) });
        }
      }
    } finally {
      outbox.busy = false;
    }
  };

  const sync = async (event?: HostEvent): Promise<void> => {
    if (!s.options.publishStatus) return;
    if (since('background-status-publish')) {
      // Never awaited: an API server outage must not hold the host's state machine.
      if (event) outbox.events = [...outbox.events, event].slice(-MAX_QUEUED_EVENTS);
      outbox.dirty = true;
      if (!outbox.busy) void drainOutbox();
      return;
    }
    try {
      await kube.publishHostStatus({ ref: s.ref, status: s.status, event });
    } catch (err) {
      // The host's work goes on; the next transition publishes the whole status again.
      log.warn('could not publish host status', { error: failureMessage(err) });
    }
  };

  return { sync, busy: () => outbox.busy };
}
