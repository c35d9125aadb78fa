/**
 * Records host histories for patches servicing and settings-held-event, on the running test stack:
 * - `old` (run from a checkout of the code before them): a provisioned host whose spec.firmware
 *   changes (held), then rebooted and deleted (host-settings-held-on-provisioned-v1.json);
 * - `new`: the same host given a HostUpdatePolicy of firmwareSettings onReboot: the change is
 *   serviced at the reboot, then a `bios` clean request is serviced at once, then deleted
 *   (host-servicing.json).
 * `node --import tsx test/support/record-servicing-histories.ts old|new` with the test stack up
 * (the workflow code is bundled from the checkout the script runs in).
 */
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import type { HostSpec } from '../../types/host';
import { hostWorkflowId } from '../../types/host-ref';
import * as definitions from '../../workflows/definitions';
import { hostViewQuery, type HostView } from '../../workflows/definitions';
import { WORKFLOW_BUNDLE_OPTIONS } from '../../workers/worker';
import { FAST_HOST_OPTIONS, randomMac, startHarness, waitFor } from './harness';
import { assertNewFixtures, saveHistory } from './record-fixture';

const shape = process.argv[2];
if (shape !== 'old' && shape !== 'new') throw new Error('usage: record-servicing-histories.ts old|new');
const FILE = shape === 'old' ? 'host-settings-held-on-provisioned-v1.json' : 'host-servicing.json';
assertNewFixtures(FILE);
const { code } = await bundleWorkflowCode({ ...WORKFLOW_BUNDLE_OPTIONS, logger: new DefaultLogger('WARN') });
const h = await startHarness({ hostOptions: FAST_HOST_OPTIONS, workflowCode: code });
try {
  const ref = { namespace: 'replay', name: `servicing-${Date.now()}` };
  const handle = h.client.workflow.getHandle(hostWorkflowId(ref));
  const mac = randomMac();
  const image = { url: 'http://127.0.0.1/img.qcow2', checksum: 'c'.repeat(32), checksumType: 'md5' as const, format: 'qcow2' as const };
  const spec = (over: Partial<HostSpec>): HostSpec => ({ bmc: { address: 'fake://replay-servicing', credentialsName: 'replay-servicing-bmc' }, bootMACAddress: mac, online: true, image, ...over });
  const until = (what: string, ok: (v: HostView) => boolean) =>
    waitFor(what, async () => {
      const v = await handle.query(hostViewQuery);
      return ok(v) ? v : undefined;
    }, { timeoutMs: 180_000 });
  const done = (kind: string, count: number) => (v: HostView) => !v.currentOperation && v.operations.filter((o) => o.kind === kind && o.outcome === 'succeeded').length === count;
  await h.hosts.put(ref, { spec: spec({}), credentials: { username: 'admin', password: 'recorded-password' } });
  await until('provisioned', (v) => v.status.provisioning.state === 'provisioned' && !v.currentOperation);
  await h.hosts.put(ref, { spec: spec({ firmware: { virtualizationEnabled: true } }) });
  if (shape === 'new') {
    // Looked up by name so that the old checkout (which has no such update) still compiles this file.
    const setPolicy = (definitions as Record<string, unknown>).setUpdatePolicyUpdate as typeof definitions.setUpdatePolicyUpdate;
    await handle.executeUpdate(setPolicy, { args: [{ firmwareSettings: 'onReboot' }] });
  }
  await h.hosts.reboot(ref);
  await until('rebooted', done('reboot', 1));
  if (shape === 'new') {
    await h.hosts.clean(ref, { steps: [{ name: 'bios', settings: { ProcVirtualization: 'Disabled' } }] });
    await until('serviced twice', done('service', 2));
  }
  await h.hosts.remove(ref);
  await handle.result();
  saveHistory(hostWorkflowId(ref), FILE);
} finally {
  await h.close();
}
