/**
 * Records a host history of manual cleaning (patch manual-clean) for the
 * replay test, on the running test stack: an available host asked for a
 * raid and a bios step (fake-hardware has no RAID clean step: Ironic fails
 * it), the failure retried, the request corrected to the bios step alone,
 * the clean done, the host available again, then deleted
 * (host-manual-clean<suffix>.json). Run it after an intended, versioned
 * change to the clean path, with a suffix naming it:
 * `node --import tsx test/support/record-clean-histories.ts -<patch id>` (with
 * the test stack up and its workflow bundle built from the current code, e.g.
 * after a test run with METALFLOW_KEEP_TEST_STACK=1). No suffix: the first shape.
 */
import { hostWorkflowId } from '../../types/host-ref';
import { hostViewQuery, type HostView } from '../../workflows/definitions';
import { randomMac, startHarness, waitFor } from './harness';
import { assertNewFixtures, saveHistory } from './record-fixture';

const suffix = process.argv[2] ?? '';
const file = `host-manual-clean${suffix}.json`;
assertNewFixtures(file);
const h = await startHarness({ hostOptions: { errorBackoffSeconds: 1, maxErrorBackoffSeconds: 4 } });
try {
  const ref = { namespace: 'replay', name: `clean-${Date.now()}` };
  const handle = h.client.workflow.getHandle(hostWorkflowId(ref));
  const view = (): Promise<HostView> => handle.query(hostViewQuery);
  const idleIn = async (state: string) => {
    const v = await view();
    return v.status.provisioning.state === state && !v.currentOperation && !v.cleanRequest;
  };
  await h.hosts.put(ref, {
    spec: { bmc: { address: 'fake://replay-clean', credentialsName: 'replay-clean-bmc' }, bootMACAddress: randomMac(), online: true },
    credentials: { username: 'admin', password: 'recorded-password' },
  });
  await waitFor('available', () => idleIn('available'), { timeoutMs: 120_000 });
  const bios = { name: 'bios' as const, firmware: { virtualizationEnabled: true } };
  await h.hosts.clean(ref, { steps: [{ name: 'raid', raid: { hardwareRAIDVolumes: [{ level: '1' }] } }, bios] });
  await waitFor('the raid step failed twice', async () => (await view()).status.errorCount >= 2, { timeoutMs: 120_000 });
  await waitFor('the corrected request accepted', async () => Boolean(await h.hosts.clean(ref, { steps: [bios] })));
  await waitFor('available again', () => idleIn('available'), { timeoutMs: 120_000 });
  await h.hosts.remove(ref);
  await handle.result();
  saveHistory(hostWorkflowId(ref), file);
} finally {
  await h.close();
}
