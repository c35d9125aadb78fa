/**
 * Metal3's HostUpdatePolicy in Kubernetes mode: the policy of a host's name
 * and namespace is handed to its workflow (`setUpdatePolicy`), level-
 * triggered from the host's reconcile; a policy's informer event queues the
 * host of its name. Deleting the policy hands null (no servicing).
 */
import type { Client } from '@temporalio/client';
import type { HostRef } from '../../model/host';
import { hostWorkflowId } from '../../model/host-ref';
import { normalUpdatePolicy, updatePolicyErrors, UPDATE_POLICY, type HostUpdatePolicySpec } from '../../model/host-update-policy';
import { formatFieldErrors } from '../../model/field-error';
import { hostViewQuery, setUpdatePolicyUpdate } from '../../contracts/host';
import type { KubeObject } from './informer';

export interface HostUpdatePolicyObject extends KubeObject {
  spec?: unknown;
}

export const updatePoliciesPath = (namespace?: string): string =>
  `/apis/${UPDATE_POLICY.group}/${UPDATE_POLICY.version}/${namespace ? `namespaces/${namespace}/` : ''}${UPDATE_POLICY.plural}`;

/** The policy an object asks for (null: none, or one whose spec is not Metal3's, which is logged). */
export function policyOf(obj: HostUpdatePolicyObject | undefined, log?: (m: string) => void): HostUpdatePolicySpec | null {
  if (!obj) return null;
  const spec = obj.spec ?? {};
  const errors = updatePolicyErrors(spec);
  if (errors.length > 0) {
    log?.(`HostUpdatePolicy ${obj.metadata.namespace ?? ''}/${obj.metadata.name} ignored: ${formatFieldErrors(errors)}`);
    return null;
  }
  return normalUpdatePolicy(spec as Record<string, unknown>);
}

/** Hands the host's policy to its running workflow when it differs from what the workflow holds; `sent` remembers it per host. */
export async function syncUpdatePolicy(
  client: Client,
  ref: HostRef,
  want: HostUpdatePolicySpec | null,
  sent: Map<string, string>,
): Promise<void> {
  const key = `${ref.namespace}/${ref.name}`;
  const fingerprint = JSON.stringify(want);
  const known = sent.get(key);
  if (known === fingerprint) return;
  const handle = client.workflow.getHandle(hostWorkflowId(ref));
  // What was last handed over is what the run holds: a change goes at once. Only a host not seen since the
  // controller started is asked first (an update that changes nothing would still be history; a query is a
  // workflow task, docs/adr/0006-local-activity-heartbeat.md).
  const held = known ?? JSON.stringify((await handle.query(hostViewQuery)).updatePolicy ?? null);
  if (held !== fingerprint) {
    await handle.executeUpdate(setUpdatePolicyUpdate, { args: [want] });
  }
  sent.set(key, fingerprint);
}
