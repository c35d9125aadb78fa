/**
 * `status.provisioningFailCount` edited on the object (`kubectl patch bmh … --subresource=status`),
 * as BMO users reset the provisioning retry limit: BMO re-reads its status on every reconcile;
 * here the host's workflow owns the status, so the controller hands the lowered count over. Told once
 * per count and message; the workflow's next status write ends the hold either way.
 */
import type { Client } from '@temporalio/client';
import { hostWorkflowId } from '../../model/host-ref';
import type { HostRef } from '../../model/host';
import { loweredFailCount } from '../../model/provisioning-retries';
import { resetProvisioningFailCountUpdate } from '../../contracts/host';
import type { BareMetalHost } from './bare-metal-host';

export async function syncFailCountReset(
  client: Client,
  ref: HostRef,
  obj: BareMetalHost,
  sent: Map<string, string>,
  key: string,
  log?: (message: string) => void,
): Promise<void> {
  const count = loweredFailCount(obj.status);
  if (count === undefined) {
    sent.delete(key);
    return;
  }
  const fingerprint = `${count}|${obj.status?.errorMessage ?? ''}`;
  if (sent.get(key) === fingerprint) return;
  const result = await client.workflow.getHandle(hostWorkflowId(ref)).executeUpdate(resetProvisioningFailCountUpdate, { args: [{ provisioningFailCount: count }] });
  sent.set(key, fingerprint);
  if (result.reset) log?.(`${ref.namespace}/${ref.name}: provisioningFailCount reset to ${count} on the object: provisioning is tried again`);
}
