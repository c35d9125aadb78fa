/**
 * Records host histories for patch firmware-servicing, on the running test stack:
 * - `old` (run from a checkout of the code before it): a provisioned host given a HostUpdatePolicy
 *   (firmwareSettings and firmwareUpdates onReboot), rebooted with nothing to service, then deleted
 *   (host-firmware-change-waits-v1.json: the HostFirmwareSettings change then waited outside the workflow);
 * - `new`: the same host given a HostFirmwareSettings change held for servicing (`holdFirmwareChange`),
 *   serviced at the reboot (firmware then bios), a second change held and withdrawn, then deleted
 *   (host-firmware-change-serviced.json).
 * - `held-old` / `held-new` (patch held-firmware-kept): a provisioned host without a policy holds a change
 *   (firmware images and a bios setting), its image is removed, and it is deleted once available: the
 *   code before the patch drops the change at the deprovision (host-firmware-held-deprovisioned-v1.json),
 *   the patch takes it as the available host's clean (host-firmware-held-kept.json).
 * `node --import tsx test/support/record-firmware-servicing-histories.ts old|new|held-old|held-new` with the
 * test stack up (the workflow code is bundled from the checkout the script runs in).
 */
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import type { HostSpec } from '../../types/host';
import type { CleanRequest } from '../../types/clean';
import { hostWorkflowId } from '../../types/host-ref';
import * as definitions from '../../workflows/definitions';
import { hostViewQuery, setUpdatePolicyUpdate, type HostView } from '../../workflows/definitions';
import { WORKFLOW_BUNDLE_OPTIONS } from '../../workers/worker';
import { FAST_HOST_OPTIONS, randomMac, startHarness, waitFor } from './harness';
import { assertNewFixtures, saveHistory } from './record-fixture';

const FILES: Record<string, string> = {
  old: 'host-firmware-change-waits-v1.json',
  new: 'host-firmware-change-serviced.json',
  'held-old': 'host-firmware-held-deprovisioned-v1.json',
  'held-new': 'host-firmware-held-kept.json',
};
const shape = process.argv[2] ?? '';
const FILE = FILES[shape];
if (!FILE) throw new Error('usage: record-firmware-servicing-histories.ts old|new|held-old|held-new');
assertNewFixtures(FILE);
const { code } = await bundleWorkflowCode({ ...WORKFLOW_BUNDLE_OPTIONS, logger: new DefaultLogger('WARN') });
const h = await startHarness({ hostOptions: FAST_HOST_OPTIONS, workflowCode: code });
try {
  const ref = { namespace: 'replay', name: `fw-servicing-${Date.now()}` };
  const handle = h.client.workflow.getHandle(hostWorkflowId(ref));
  const mac = randomMac();
  const image = { url: 'http://127.0.0.1/img.qcow2', checksum: 'c'.repeat(32), checksumType: 'md5' as const, format: 'qcow2' as const };
  const spec: HostSpec = { bmc: { address: 'fake://replay-fw-servicing', credentialsName: 'replay-fw-servicing-bmc' }, bootMACAddress: mac, online: true, image };
  const until = (what: string, ok: (v: HostView) => boolean) =>
    waitFor(what, async () => {
      const v = await handle.query(hostViewQuery);
      return ok(v) ? v : undefined;
    }, { timeoutMs: 180_000 });
  const done = (kind: string, count: number) => (v: HostView) => !v.currentOperation && v.operations.filter((o) => o.kind === kind && o.outcome === 'succeeded').length === count;
  await h.hosts.put(ref, { spec, credentials: { username: 'admin', password: 'recorded-password' } });
  await until('provisioned', (v) => v.status.provisioning.state === 'provisioned' && !v.currentOperation);
  if (shape.startsWith('held-')) {
    await handle.executeUpdate(definitions.holdFirmwareChangeUpdate, {
      args: [{ steps: [{ name: 'firmware', updates: [{ component: 'bios', url: 'http://127.0.0.1/bios-2.1.0.bin' }] }, { name: 'bios', settings: { ProcVirtualization: 'Disabled' } }] }],
    });
    await until('held', (v) => v.firmwareHeld !== undefined);
    const { image: _image, ...withoutImage } = spec;
    await h.hosts.put(ref, { spec: withoutImage });
    const cleaned = (v: HostView) => v.operations.some((o) => o.kind === 'clean' && o.outcome !== 'running');
    await until('available again', (v) => v.status.provisioning.state === 'available' && !v.currentOperation && !v.cleanRequest && (shape === 'held-old' || cleaned(v)));
  } else {
    await handle.executeUpdate(setUpdatePolicyUpdate, { args: [{ firmwareSettings: 'onReboot', firmwareUpdates: 'onReboot' }] });
    // Looked up by name so that the old checkout (which has no such update) still compiles this file.
    const hold = (definitions as Record<string, unknown>).holdFirmwareChangeUpdate as typeof definitions.holdFirmwareChangeUpdate | undefined;
    if (shape === 'new') {
      if (!hold) throw new Error('this checkout has no holdFirmwareChange update: record `new` from the code with patch firmware-servicing');
      const steps: CleanRequest['steps'] = [
        { name: 'firmware', updates: [{ component: 'bios', url: 'http://127.0.0.1/bios-2.1.0.bin' }] },
        { name: 'bios', settings: { ProcVirtualization: 'Disabled' } },
      ];
      await handle.executeUpdate(hold, { args: [{ steps }] });
      await until('held', (v) => v.firmwareHeld !== undefined && v.settingsHeld !== undefined);
    }
    await h.hosts.reboot(ref);
    await until('rebooted', done('reboot', 1));
    if (shape === 'new' && hold) {
      await until('serviced', (v) => done('service', 1)(v) && v.firmwareHeld === undefined);
      await handle.executeUpdate(hold, { args: [{ steps: [{ name: 'bios', settings: { ProcVirtualization: 'Enabled' } }] }] });
      await until('held again', (v) => v.firmwareHeld !== undefined);
      await handle.executeUpdate(hold, { args: [null] });
      await until('withdrawn', (v) => v.firmwareHeld === undefined && v.settingsHeld === undefined);
    }
  }
  await h.hosts.remove(ref);
  await handle.result();
  saveHistory(hostWorkflowId(ref), FILE);
} finally {
  await h.close();
}
