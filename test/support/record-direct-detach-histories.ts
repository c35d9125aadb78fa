/**
 * Records the detach of a `provisioner: direct` host for the replay test
 * (patch `direct-detach-without-ironic`): a direct host with an IPMI BMC
 * (ipmi_sim) becomes available and is detached through the
 * `baremetalhost.metal3.io/detached` directive. Saves the detach child's run
 * as `operation-detach-direct<suffix>.json` (argument: the suffix;
 * `-v1` was recorded before the patch, `-without-ironic` after it). Never
 * overwrites a fixture.
 * `node --import tsx test/support/record-direct-detach-histories.ts <suffix>` on a
 * running test stack.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../config/env';
import { hostWorkflowId } from '../../types/host-ref';
import { applyDirectivesUpdate, hostViewQuery } from '../../workflows/definitions';
import type { hostWorkflow } from '../../workflows/host';
import { TEMPORAL_ADDRESS } from './env';
import { FAST_HOST_OPTIONS, randomMac, startHarness, waitFor } from './harness';
import { IPMI_PASSWORD, IPMI_USER, startIpmiSim } from '../bmc/support/ipmi-sim';

const suffix = process.argv[2] ?? '-without-ironic';
const OUT = join(REPO_ROOT, 'test', 'fixtures', 'histories');
const sim = await startIpmiSim(Number(process.env.TEST_RECORD_IPMI_PORT ?? 22639));
const h = await startHarness({ hostOptions: FAST_HOST_OPTIONS });
try {
  const ref = { namespace: 'replay', name: `detach-direct-${Date.now()}` };
  const handle = h.client.workflow.getHandle<typeof hostWorkflow>(hostWorkflowId(ref));
  await h.hosts.put(ref, {
    spec: {
      bmc: { address: `ipmi://127.0.0.1:${sim.port}`, credentialsName: 'replay-ipmi' },
      bootMACAddress: randomMac(),
      online: false,
      provisioner: 'direct',
    },
    credentials: { username: IPMI_USER, password: IPMI_PASSWORD },
  });
  await waitFor('available', async () => {
    const v = await handle.query(hostViewQuery);
    return v.status.provisioning.state === 'available' && !v.currentOperation;
  });
  await handle.executeUpdate(applyDirectivesUpdate, { args: [{ detached: { deleteAction: 'delete', force: false } }] });
  const detached = await waitFor('detached', async () => {
    const v = await handle.query(hostViewQuery);
    const op = v.operations.find((o) => o.kind === 'detach' && o.outcome === 'succeeded');
    return op && !v.currentOperation ? op : undefined;
  });
  await h.hosts.remove(ref);
  await handle.result();
  if (!detached.workflowId) throw new Error('the detach ran inside the host workflow (patch operations-inline): there is no child history to record');
  const json = execFileSync(join(REPO_ROOT, '.venv', 'bin', 'temporal'), [
    'workflow', 'show', '--address', TEMPORAL_ADDRESS, '-w', detached.workflowId, '-o', 'json',
  ]);
  const file = `operation-detach-direct${suffix}.json`;
  writeFileSync(join(OUT, file), json, { flag: 'wx' });
  console.log(`recorded ${detached.workflowId} → ${file}`);
} finally {
  await h.close();
  await sim.stop();
}
