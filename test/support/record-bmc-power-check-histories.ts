/**
 * Records a host whose power belongs to its BMC (a `provisioner: direct` host
 * on ipmi_sim) through periodic power checks and a mismatch found and
 * corrected, for the replay test (patch `bmc-power-check-activity`: the BMC
 * read is an activity with heartbeats, no longer a 4 s local activity). Saves
 * the host's run as `host-bmc-power-check<suffix>.json` (argument: the suffix;
 * `-v1` was recorded before the patch, `-activity` after it). Never overwrites
 * a fixture. `node --import tsx test/support/record-bmc-power-check-histories.ts <suffix>`
 * on a running test stack.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../config/env';
import { hostWorkflowId } from '../../types/host-ref';
import { hostViewQuery } from '../../workflows/definitions';
import type { hostWorkflow } from '../../workflows/host';
import { TEMPORAL_ADDRESS } from './env';
import { FAST_HOST_OPTIONS, startHarness, waitFor } from './harness';
import { IPMI_PASSWORD, IPMI_USER, startIpmiSim } from '../bmc/support/ipmi-sim';

const suffix = process.argv[2] ?? '-activity';
const OUT = join(REPO_ROOT, 'test', 'fixtures', 'histories');
const sim = await startIpmiSim(Number(process.env.TEST_RECORD_IPMI_PORT ?? 22639));
const h = await startHarness({ hostOptions: { ...FAST_HOST_OPTIONS, powerCheckSeconds: 1 } });
try {
  const ref = { namespace: 'replay', name: `bmc-power-${Date.now()}` };
  const handle = h.client.workflow.getHandle<typeof hostWorkflow>(hostWorkflowId(ref));
  sim.setSoftDelay('0');
  await h.hosts.put(ref, {
    spec: { bmc: { address: `ipmi://127.0.0.1:${sim.port}`, credentialsName: 'replay-bmc-power' }, online: true, provisioner: 'direct' },
    credentials: { username: IPMI_USER, password: IPMI_PASSWORD },
  });
  await waitFor('available and on', async () => {
    const v = await handle.query(hostViewQuery);
    return v.status.provisioning.state === 'available' && v.status.poweredOn && !v.currentOperation;
  });
  // Powered off behind the host's back: a check finds it and the host powers it on again.
  sim.setPowerFile('0');
  await waitFor('mismatch corrected', async () => {
    const v = await handle.query(hostViewQuery);
    return v.power.lastMismatch !== undefined && v.status.poweredOn && !v.currentOperation && sim.file('power') === '1';
  });
  // A few quiet checks after it.
  const length = (await handle.describe()).historyLength;
  await waitFor('three more checks', async () => (await handle.describe()).historyLength >= length + 15);
  await h.hosts.remove(ref);
  await handle.result();
  const json = execFileSync(join(REPO_ROOT, '.venv', 'bin', 'temporal'), [
    'workflow', 'show', '--address', TEMPORAL_ADDRESS, '-w', hostWorkflowId(ref), '-o', 'json',
  ]);
  const file = `host-bmc-power-check${suffix}.json`;
  writeFileSync(join(OUT, file), json, { flag: 'wx' });
  console.log(`recorded ${hostWorkflowId(ref)} → ${file}`);
} finally {
  await h.close();
  await sim.stop();
}
