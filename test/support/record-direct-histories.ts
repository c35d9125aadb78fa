/**
 * Records a `provisioner: direct` host for the replay test: no Ironic, the
 * workflow speaks Redfish to sushy-tools' system mf-bm-05 of the test stack
 * (as test/integration/direct-provisioner.test.ts does): registered,
 * inspected out of band, a live ISO booted from virtual media, the image
 * removed, deleted. Saves the host's run and one run of each direct
 * operation. Never overwrites a fixture.
 * `node --import tsx test/support/record-direct-histories.ts` on a running test stack.
 */
import { hostWorkflowId } from '../../types/host-ref';
import type { HostSpec } from '../../types/host';
import { hostViewQuery, type HostView, type OperationKind } from '../../workflows/definitions';
import type { hostWorkflow } from '../../workflows/host';
import { serveFiles, tinyIso } from '../bmc/support/files';
import { SUSHY_URL } from './env';
import { FAST_HOST_OPTIONS, startHarness, waitFor } from './harness';
import { assertNewFixtures, saveHistory, saveOperationHistory } from './record-fixture';
import { resetRedfishSystem } from './redfish-system';

const ADDRESS = `redfish-virtualmedia+${SUSHY_URL}/redfish/v1/Systems/6d660000-0000-4000-8000-000000000005`;
const KINDS: OperationKind[] = ['enroll', 'inspect', 'prepare', 'power', 'provision', 'deprovision', 'delete'];
// A suffix (e.g. -operations-inline) records a later shape into new files.
const suffix = process.argv[2] ?? '';
const HOST_FILE = `host-direct-provisioner${suffix}.json`;
const opFile = (kind: OperationKind) => `operation-direct-${kind}${suffix}.json`;
assertNewFixtures(HOST_FILE, ...KINDS.map(opFile));

await resetRedfishSystem(ADDRESS);
const iso = await serveFiles({ 'live.iso': tinyIso() });
const h = await startHarness({ hostOptions: FAST_HOST_OPTIONS });
try {
  const ref = { namespace: 'replay', name: `direct-${Date.now()}` };
  const handle = h.client.workflow.getHandle<typeof hostWorkflow>(hostWorkflowId(ref));
  const settled = (state: string) => async () => {
    const v = await handle.query(hostViewQuery);
    return v.status.provisioning.state === state && !v.currentOperation && v.status.operationalStatus === 'OK' ? v : undefined;
  };
  const spec: HostSpec = { bmc: { address: ADDRESS, credentialsName: 'replay-direct-bmc' }, online: true, provisioner: 'direct' };
  await h.hosts.put(ref, { spec, credentials: { username: 'admin', password: 'password' } });
  await waitFor('available', settled('available'), { timeoutMs: 120_000 });
  await h.hosts.setImage(ref, { url: iso.url('live.iso'), format: 'live-iso' });
  await waitFor('provisioned', settled('provisioned'), { timeoutMs: 120_000 });
  await h.hosts.put(ref, { spec: { ...spec, online: false } });
  await waitFor('available again', settled('available'), { timeoutMs: 120_000 });
  await h.hosts.remove(ref);
  const { operations } = (await handle.result()) as HostView;
  saveHistory(hostWorkflowId(ref), HOST_FILE);
  for (const kind of KINDS) {
    const op = operations.find((o) => o.kind === kind && o.outcome === 'succeeded');
    if (!op) throw new Error(`the direct host ran no successful ${kind}`);
    saveOperationHistory(op, opFile(kind));
  }
} finally {
  await h.close();
  await iso.close();
}
