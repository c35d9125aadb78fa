/**
 * The host workflow's answer to a change of a BareMetalHost's `metalflow.io/site` label (docs/sites.md,
 * *Moving a registered host between sites*), said on the object. A refusal (an operation running, a state
 * not at rest, a detached host, spec.dhcp, a move under way) leaves the host as it was, with its workflow
 * running on the spec it had: unlike an invalid spec it is no error of the host, and the reconcile is
 * retried with backoff, so the host moves once it can. So the object gets its own condition,
 * `SiteLabelAccepted` `False` / `SiteMoveRefused` with the workflow's reason, and a Warning Event
 * `SiteMoveRefused` once per reason; the condition turns `True` once the workflow takes the label. The
 * condition is the record of what was said: a restarted controller does not say it again.
 */
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { KubeRest } from '../../clients/kubernetes/kube-rest';
import { MERGE } from '../../clients/kubernetes/metal3-objects';
import { recordHostEvent } from '../../clients/kubernetes/events';
import { kubeTimestamp, type HostCondition } from '../../model/conditions';
import { fitStrings } from '../../model/fit-schema';
import { HostStatusSchema, type HostRef } from '../../model/host';
import { DEFAULT_SITE, SITE_LABEL, SITE_LABEL_FIELD } from '../../model/site';
import type { BareMetalHost } from './bare-metal-host';

/** metalflow's condition on a host whose site label the workflow refused (no Metal3 counterpart). */
export const SITE_LABEL_CONDITION = 'SiteLabelAccepted';

/** The workflow's reason when it refused the spec for its site label, else undefined (any other failure). */
export function siteLabelRefusal(err: unknown): string | undefined {
  const cause = err instanceof WorkflowUpdateFailedError ? err.cause : undefined;
  if (!(cause instanceof ApplicationFailure) || cause.type !== 'Conflict') return undefined;
  return cause.message.startsWith(SITE_LABEL_FIELD) ? cause.message : undefined;
}

const conditionOf = (obj: BareMetalHost): HostCondition | undefined =>
  (Array.isArray(obj.status?.conditions) ? (obj.status.conditions as HostCondition[]) : []).find((c) => c.type === SITE_LABEL_CONDITION);

/**
 * Says the workflow's answer on the object: `refusal` when it refused the label's site, undefined when it
 * took the spec. Nothing is written for a host that never had a label refused, nor twice for one reason.
 */
export async function reportSiteLabel(deps: { rest: KubeRest; log?: (m: string) => void }, objectPath: string, obj: BareMetalHost, ref: HostRef, refusal: string | undefined): Promise<void> {
  const before = conditionOf(obj);
  const message = refusal ? fitStrings(HostStatusSchema.properties.errorMessage, refusal) : '';
  if (!refusal && (!before || before.status === 'True')) return;
  if (refusal && before?.status === 'False' && before.message === message) return;
  const site = obj.metadata.labels?.[SITE_LABEL] ?? DEFAULT_SITE;
  const status = refusal ? 'False' : 'True';
  const condition: HostCondition = {
    type: SITE_LABEL_CONDITION,
    status,
    reason: refusal ? 'SiteMoveRefused' : 'SiteLabelAccepted',
    message: refusal ? message : `the host takes its site label: site "${site}"`,
    lastTransitionTime: before?.status === status ? before.lastTransitionTime : kubeTimestamp(new Date()),
    ...(obj.metadata.generation !== undefined ? { observedGeneration: obj.metadata.generation } : {}),
  };
  const others = (Array.isArray(obj.status?.conditions) ? (obj.status.conditions as HostCondition[]) : []).filter((c) => c.type !== SITE_LABEL_CONDITION);
  // With the resourceVersion read: a worker's status written since is not overwritten (409; the queue retries on the new object).
  await deps.rest.call('PATCH', `${objectPath}/status`, {
    body: { metadata: { resourceVersion: obj.metadata.resourceVersion }, status: { conditions: [...others, condition] } },
    contentType: MERGE,
  });
  if (refusal) {
    deps.log?.(`${ref.namespace}/${ref.name}: ${message}`);
    await recordHostEvent(deps.rest, { ...ref, uid: obj.metadata.uid }, { type: 'Warning', reason: 'SiteMoveRefused', message }, 'metalflow-controller');
  }
}
