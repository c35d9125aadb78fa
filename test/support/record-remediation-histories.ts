/**
 * Records a remediation for the replay test: an API-mode remediation (no
 * Node: the power cycle through the host workflow's keyed power-off request)
 * of an available host, `remediation-api-power-cycle<suffix>.json`; with the
 * kind `disable-power-off-refused` or `disable-power-off-reboots`, of a host
 * with spec.disablePowerOff, `remediation-<kind><suffix>.json` (refused before
 * patch remediation-disable-power-off-reboot, rebooted since); with the kind
 * `reprovision`, of a provisioned host whose reboot is given less time than
 * any power change, re-provisioned (patch remediation-reprovision). Never
 * overwrites a fixture. `node --import tsx test/support/record-remediation-histories.ts <suffix> [kind]`
 * (default `-v1`) on a running test stack.
 */
import { randomUUID } from 'node:crypto';
import { remediationWorkflowId, type RemediationInput } from '../../workflows/remediation-definitions';
import type { remediateWorkflow } from '../../workflows/remediate';
import type { RemediationRequest } from '../../types/remediation';
import { assertNewFixtures, saveHistory } from './record-fixture';
import { FAST_HOST_OPTIONS, randomMac, startHarness, waitFor } from './harness';

const suffix = process.argv[2] ?? '-v1';
const kind = process.argv[3] ?? 'api-power-cycle';
const REBOOT: RemediationRequest['strategy'] = { type: 'Reboot' };
const KINDS: Record<string, { disablePowerOff: boolean; outcome: string; strategy?: RemediationRequest['strategy'] }> = {
  'api-power-cycle': { disablePowerOff: false, outcome: 'succeeded' },
  'disable-power-off-refused': { disablePowerOff: true, outcome: 'refused' },
  'disable-power-off-reboots': { disablePowerOff: true, outcome: 'succeeded' },
  reprovision: { disablePowerOff: false, outcome: 'succeeded', strategy: { type: 'Reboot', timeoutSeconds: 0.001, reprovision: {} } },
};
const IMAGE = { url: 'http://127.0.0.1/images/replay-remed.qcow2', checksum: 'e'.repeat(64), checksumType: 'sha256' as const, format: 'qcow2' as const };
const recorded = KINDS[kind];
if (!recorded) throw new Error(`kind must be one of ${Object.keys(KINDS).join(', ')}`);
const file = `remediation-${kind}${suffix}.json`;
assertNewFixtures(file);

const ref = { namespace: `replay-remed-${Date.now()}`, name: 'remed-a' };
const h = await startHarness({ hostOptions: FAST_HOST_OPTIONS });
try {
  await h.hosts.put(ref, {
    spec: { bmc: { address: `fake://${ref.name}`, credentialsName: `${ref.name}-bmc` }, bootMACAddress: randomMac(), online: true, ...(recorded.disablePowerOff ? { disablePowerOff: true } : {}), ...(recorded.strategy ? { image: IMAGE } : {}) },
    credentials: { username: 'admin', password: 'pw' },
  });
  await waitFor('available', async () => {
    const v = await h.hosts.get(ref);
    return v.status.provisioning.state === (recorded.strategy ? 'provisioned' : 'available') && v.status.poweredOn && !v.currentOperation;
  }, { timeoutMs: 240_000 });
  const uid = randomUUID();
  const input: RemediationInput = { ref, uid, request: { strategy: recorded.strategy ?? REBOOT }, kubernetes: false };
  const handle = await h.client.workflow.start<typeof remediateWorkflow>('remediateWorkflow', { workflowId: remediationWorkflowId(ref, uid), taskQueue: h.taskQueue, args: [input] });
  const view = await handle.result();
  if (view.outcome !== recorded.outcome) throw new Error(`the remediation ended ${view.outcome}: ${view.message ?? ''}`);
  saveHistory(handle.workflowId, file);
  await h.hosts.remove(ref);
} finally {
  await h.close();
}
