/**
 * Kubernetes Events about a BareMetalHost, so `kubectl describe bmh` tells the
 * story. Shared by the status activity and the controller.
 */
import type { KubeRest } from './kube-rest';

export interface HostEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

export interface EventSubject {
  namespace: string;
  name: string;
  uid?: string;
}

export async function recordHostEvent(rest: KubeRest, subject: EventSubject, event: HostEvent, component: string): Promise<void> {
  const now = new Date().toISOString();
  await rest.call('POST', `/api/v1/namespaces/${subject.namespace}/events`, {
    body: {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { generateName: `${subject.name}.`, namespace: subject.namespace },
      involvedObject: { apiVersion: 'metal3.io/v1alpha1', kind: 'BareMetalHost', name: subject.name, namespace: subject.namespace, uid: subject.uid },
      reason: event.reason,
      message: event.message,
      type: event.type,
      source: { component },
      reportingComponent: component,
      reportingInstance: component,
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    },
  });
}
