/**
 * Records a host taken offline by `spec.online: false` and back for the replay
 * test: `old` on the code before patch soft-power-off (a hard power off),
 * `new` after it (a soft power off). Never overwrites a fixture.
 * `node --import tsx test/support/record-soft-power-off-histories.ts old|new`
 * on a running test stack whose workflow bundle was built from the code to record.
 */
import { hostWorkflowId } from '../../types/host-ref';
import { hostViewQuery, type HostView } from '../../workflows/definitions';
import type { HostSpec } from '../../types/host';
import { randomMac, startHarness, waitFor } from './harness';
import { assertNewFixtures, saveHistory } from './record-fixture';

const shape = process.argv[2];
if (shape !== 'old' && shape !== 'new') throw new Error('usage: record-soft-power-off-histories.ts old|new');
const FILE = shape === 'old' ? 'host-online-false-before-soft-power-off.json' : 'host-online-false-soft-power-off.json';
assertNewFixtures(FILE);
const h = await startHarness({ hostOptions: { errorBackoffSeconds: 1, maxErrorBackoffSeconds: 4, softPowerOffSeconds: 5 } });
try {
  const ref = { namespace: 'replay', name: `offline-${Date.now()}` };
  const handle = h.client.workflow.getHandle(hostWorkflowId(ref));
  const view = (): Promise<HostView> => handle.query(hostViewQuery);
  const spec: HostSpec = { bmc: { address: 'fake://replay-offline', credentialsName: 'replay-offline-bmc' }, bootMACAddress: randomMac(), online: true };
  await h.hosts.put(ref, { spec, credentials: { username: 'admin', password: 'recorded-password' } });
  await waitFor('available and on', async () => {
    const v = await view();
    return v.status.provisioning.state === 'available' && v.status.poweredOn && !v.currentOperation;
  });
  await h.hosts.put(ref, { spec: { ...spec, online: false } });
  await waitFor('off', async () => !(await view()).status.poweredOn);
  await h.hosts.put(ref, { spec });
  await waitFor('on again', async () => (await view()).status.poweredOn);
  await h.hosts.remove(ref);
  await handle.result();
  saveHistory(hostWorkflowId(ref), FILE);
} finally {
  await h.close();
}
