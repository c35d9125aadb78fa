/**
 * Kubernetes Events about a BareMetalHost, so `kubectl describe bmh` tells the
 * story. Shared by the status activity and the controller.
 */
import { isKubeError } from './kube-error';
import type { KubeRest } from './kube-rest';
import type { HostEvent } from '../../model/host-event';
import { BMO_EVENT_COMPONENT, BMO_REPORTING_CONTROLLER } from './bmo-events';

export type { HostEvent };

export interface EventSubject {
  namespace: string;
  name: string;
  uid?: string;
  /** A metal3.io/v1alpha1 kind; BareMetalHost when unset. */
  kind?: string;
}

/**
 * `source.component` and `reportingComponent` are BMO's (alerts select on them); `instance`, which
 * metalflow process wrote it (the worker's status activity or the controller). `name`, when given,
 * makes the write idempotent: a second POST of it is a 409, taken as done.
 */
export async function recordHostEvent(rest: KubeRest, subject: EventSubject, event: HostEvent, instance: string, name?: string): Promise<void> {
  const now = new Date().toISOString();
  await rest.call('POST', `/api/v1/namespaces/${subject.namespace}/events`, {
    body: {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { ...(name ? { name } : { generateName: `${subject.name}.` }), namespace: subject.namespace },
      involvedObject: { apiVersion: 'metal3.io/v1alpha1', kind: subject.kind ?? 'BareMetalHost', name: subject.name, namespace: subject.namespace, uid: subject.uid },
      reason: event.reason,
      message: event.message,
      type: event.type,
      source: { component: BMO_EVENT_COMPONENT },
      reportingComponent: BMO_REPORTING_CONTROLLER,
      reportingInstance: instance,
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    },
  }).catch((err: unknown) => {
    // A named Event already there was written by an earlier attempt of the same write.
    if (!(name && isKubeError(err, 'conflict'))) throw err;
  });
}

/** Whether an Event write may pass when sent again: anything but a refusal, a vanished namespace or a name taken. */
export const eventWriteRetryable = (err: unknown): boolean => !isKubeError(err, 'rejected') && !isKubeError(err, 'not-found') && !isKubeError(err, 'conflict');

/**
 * How often an Event write that failed for a passing reason (429 while an API server initializes its storage or
 * throttles, 5xx, no answer) is sent, the first pause doubled each time. Its writers record a decision once and do
 * not come back to it, so an Event not written now would never be (client-go's recorder retries likewise).
 */
export const EVENT_WRITE_RETRIES = { attempts: 4, firstPauseMs: 250 };

/** `write` until it passes, a refusal, or the last attempt; `sleep` lets an activity's pause end with its cancellation. */
export async function withEventRetries(write: () => Promise<void>, sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms))): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (err) {
      if (!eventWriteRetryable(err) || attempt >= EVENT_WRITE_RETRIES.attempts) throw err;
      await sleep(EVENT_WRITE_RETRIES.firstPauseMs * 2 ** (attempt - 1));
    }
  }
}
