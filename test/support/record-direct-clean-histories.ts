/**
 * Records a `provisioner: direct` host asked for a manual clean, for the
 * replay test, on the running test stack (sushy-tools system mf-bm-08, whose
 * BIOS and firmware scripts/sushy_firmware.py emulates): available, a clean
 * with a bios and a firmware step asked for, then deleted.
 *
 * Without a suffix, recorded by the code before patch direct-clean: its
 * validator refused the clean (409, which leaves no event in the history)
 * and the host went on available (host-direct-clean.json). With
 * `-direct-clean`, the clean runs over Redfish (host-direct-clean-direct-clean.json).
 * `node --import tsx test/support/record-direct-clean-histories.ts [-<patch id>]`
 * with the test stack up and its workflow bundle built from the code to record.
 */
import { hostWorkflowId } from '../../types/host-ref';
import type { HostSpec } from '../../types/host';
import { hostViewQuery } from '../../workflows/definitions';
import type { hostWorkflow } from '../../workflows/host';
import { ApiError } from '../../api/host-service';
import { serveFiles } from '../bmc/support/files';
import { SUSHY_URL } from './env';
import { FAST_HOST_OPTIONS, startHarness, waitFor } from './harness';
import { assertNewFixtures, saveHistory } from './record-fixture';
import { resetRedfishSystem } from './redfish-system';

const ADDRESS = `redfish+${SUSHY_URL}/redfish/v1/Systems/6d660000-0000-4000-8000-000000000008`;
const suffix = process.argv[2] ?? '';
const file = `host-direct-clean${suffix}.json`;
assertNewFixtures(file);

await resetRedfishSystem(ADDRESS);
const images = await serveFiles({ 'bmc.bin': Buffer.from(`7.${Date.now() % 100000}\n`) });
const h = await startHarness({ hostOptions: FAST_HOST_OPTIONS });
try {
  const ref = { namespace: 'replay', name: `direct-clean-${Date.now()}` };
  const handle = h.client.workflow.getHandle<typeof hostWorkflow>(hostWorkflowId(ref));
  const idle = async () => {
    const v = await handle.query(hostViewQuery);
    return v.status.provisioning.state === 'available' && !v.currentOperation && !v.cleanRequest ? v : undefined;
  };
  const spec: HostSpec = { bmc: { address: ADDRESS, credentialsName: 'replay-direct-clean-bmc' }, online: false, provisioner: 'direct' };
  await h.hosts.put(ref, { spec, credentials: { username: 'admin', password: 'password' } });
  await waitFor('available', idle, { timeoutMs: 120_000 });
  const current = (await handle.query(hostViewQuery)).operations.length;
  try {
    const bios = { name: 'bios' as const, settings: { ProcVirtualization: Date.now() % 2 === 0 ? 'Enabled' : 'Disabled' } };
    // The code before the patch knew no firmware step (a 400 before its 409).
    const firmware = { name: 'firmware' as const, updates: [{ component: 'bmc' as const, url: images.url('bmc.bin') }] };
    await h.hosts.clean(ref, { steps: suffix ? [bios, firmware] : [bios] });
    await waitFor('the clean done', async () => ((await idle())?.operations.length ?? 0) > current, { timeoutMs: 180_000 });
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 409)) throw err;
    console.log(`refused as the code recorded does: ${err.message}`);
  }
  await h.hosts.remove(ref);
  await handle.result();
  saveHistory(hostWorkflowId(ref), file);
} finally {
  await h.close();
  await images.close();
}
