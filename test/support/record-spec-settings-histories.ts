/**
 * Records host histories for patch spec-raid-firmware (spec.raid / spec.firmware
 * applied as clean steps while preparing), on the running test stack:
 * - `old` (on the code before the patch): an available host whose spec with
 *   firmware flags is refused, then a spec without them accepted, then deleted
 *   (host-spec-settings-refused-v1.json);
 * - `new`: a host with firmware flags applied while preparing, changed on the
 *   available host (applied again), then deleted (host-spec-settings-applied.json).
 * `node --import tsx test/support/record-spec-settings-histories.ts old|new` with the
 * test stack up and its workflow bundle built from the code to record.
 */
import type { HostSpec } from '../../types/host';
import { hostWorkflowId } from '../../types/host-ref';
import { hostViewQuery, type HostView } from '../../workflows/definitions';
import { randomMac, startHarness, waitFor } from './harness';
import { assertNewFixtures, saveHistory } from './record-fixture';

const mode = process.argv[2];
if (mode !== 'old' && mode !== 'new') throw new Error('usage: record-spec-settings-histories.ts old|new');
const file = mode === 'old' ? 'host-spec-settings-refused-v1.json' : 'host-spec-settings-applied.json';
assertNewFixtures(file);
const h = await startHarness({ hostOptions: { errorBackoffSeconds: 1, maxErrorBackoffSeconds: 4 } });
try {
  const ref = { namespace: 'replay', name: `spec-settings-${Date.now()}` };
  const handle = h.client.workflow.getHandle(hostWorkflowId(ref));
  const cleans = (v: HostView) => v.operations.filter((o) => o.kind === 'clean').length;
  const idle = (count: number) => async () => {
    const v = await handle.query(hostViewQuery);
    return v.status.provisioning.state === 'available' && !v.currentOperation && cleans(v) === count;
  };
  const mac = randomMac();
  const spec = (over: Partial<HostSpec>): HostSpec => ({ bmc: { address: 'fake://replay-settings', credentialsName: 'replay-settings-bmc' }, bootMACAddress: mac, online: true, ...over });
  const first = mode === 'new' ? { firmware: { virtualizationEnabled: true } } : {};
  await h.hosts.put(ref, { spec: spec(first), credentials: { username: 'admin', password: 'recorded-password' } });
  await waitFor('available', idle(mode === 'new' ? 1 : 0), { timeoutMs: 120_000 });
  if (mode === 'new') {
    await h.hosts.put(ref, { spec: spec({ firmware: { virtualizationEnabled: false } }) });
    await waitFor('the change applied', idle(2), { timeoutMs: 120_000 });
  } else {
    const refused = await h.hosts.put(ref, { spec: spec({ firmware: { virtualizationEnabled: true } }) }).then(
      () => false,
      () => true,
    );
    if (!refused) throw new Error('the code recorded accepts spec.firmware: record "old" on the code before patch spec-raid-firmware');
    await h.hosts.put(ref, { spec: spec({ description: 'accepted' }) });
    await waitFor('the description applied', async () => (await handle.query(hostViewQuery)).spec?.description === 'accepted');
  }
  await h.hosts.remove(ref);
  await handle.result();
  saveHistory(hostWorkflowId(ref), file);
} finally {
  await h.close();
}
