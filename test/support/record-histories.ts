/**
 * Records real histories for the replay test: one host through its whole
 * lifecycle (create → provisioned → deprovisioned → deleted) and each
 * operation it ran, on the running test stack (`npm run record-histories`).
 * It refuses to overwrite the fixtures it made: they hold the first
 * version's shape; a new shape is recorded into new files, named by the
 * suffix given as argument (`… record-histories.ts -host-uid`: the shape
 * after patch `host-uid`; `-operations-inline`: operations inside the host
 * workflow, whose children there are none to record); no suffix: the first shape.
 */
import { hostWorkflowId } from '../../types/host-ref';
import { hostViewQuery, type HostView } from '../../workflows/definitions';
import { randomMac, startHarness, waitFor } from './harness';
import { assertNewFixtures, saveHistory, saveOperationHistory } from './record-fixture';

const KINDS = ['enroll', 'inspect', 'prepare', 'provision', 'deprovision', 'power', 'delete'];
const suffix = process.argv[2] ?? '';
assertNewFixtures(`host-lifecycle${suffix}.json`, ...KINDS.map((k) => `operation-${k}${suffix}.json`));
const h = await startHarness();
try {
  const ref = { namespace: 'replay', name: `lifecycle-${Date.now()}` };
  const handle = h.client.workflow.getHandle(hostWorkflowId(ref));
  const state = async () => (await handle.query(hostViewQuery)).status.provisioning.state;
  await h.hosts.put(ref, {
    spec: { bmc: { address: 'fake://replay', credentialsName: 'replay-bmc' }, bootMACAddress: randomMac(), online: true },
    credentials: { username: 'admin', password: 'recorded-password' },
  });
  await waitFor('available', async () => (await state()) === 'available');
  await h.hosts.setImage(ref, { url: 'http://127.0.0.1/replay.qcow2', checksum: 'f'.repeat(64), format: 'qcow2' });
  await waitFor('provisioned', async () => (await state()) === 'provisioned');
  await h.hosts.setImage(ref, null);
  await waitFor('available again', async () => (await state()) === 'available');
  await h.hosts.remove(ref);
  const { operations: ops } = (await handle.result()) as HostView;

  saveHistory(hostWorkflowId(ref), `host-lifecycle${suffix}.json`);
  const seen = new Set<string>();
  for (const op of ops) {
    if (seen.has(op.kind) || !KINDS.includes(op.kind)) continue;
    seen.add(op.kind);
    saveOperationHistory(op, `operation-${op.kind}${suffix}.json`);
  }
} finally {
  await h.close();
}
