/**
 * spec.disablePowerOff on the node itself (patch disable-power-off-node), on
 * the real dev server and Ironic (the stack's speaks API 1.95 and later): the
 * node's `disable_power_off` is set at registration, as BMO sets it, and
 * cleared when the spec changes back (the host registers again).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DISABLE_POWER_OFF_MICROVERSION } from '../../clients/ironic/client';
import type { HostSpec } from '../../model/host';
import { hostWorkflowId } from '../../model/host-ref';
import { applySpecUpdate, hostViewQuery, type HostView } from '../../contracts/host';
import type { hostWorkflow } from '../../workflows/host/host';
import { randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
}, 120_000);
afterAll(() => h?.close());

const NS = 'no-power-off';

it("sets the node's disable_power_off at registration and clears it when the spec changes back", async () => {
  expect(await h.ironic.supports(DISABLE_POWER_OFF_MICROVERSION)).toBe(true);
  const ref = { namespace: NS, name: uniq('dpo') };
  const spec: HostSpec = { bmc: { address: `fake://${ref.name}`, credentialsName: `${ref.name}-bmc` }, bootMACAddress: randomMac(), online: true, disablePowerOff: true };
  await h.hosts.put(ref, { spec, credentials: { username: 'admin', password: 'pw' } });
  const handle = h.client.workflow.getHandle<typeof hostWorkflow>(hostWorkflowId(ref));
  const idle = (what: string, ok: (v: HostView) => boolean) =>
    waitFor(what, async () => {
      const v = await handle.query(hostViewQuery);
      return !v.currentOperation && ok(v) ? v : undefined;
    }, { timeoutMs: 180_000 });
  const ready = await idle('available', (v) => v.status.provisioning.state === 'available');
  const nodeId = ready.status.provisioning.ID;
  expect(await h.ironic.getDisablePowerOff(nodeId)).toBe(true);

  await handle.executeUpdate(applySpecUpdate, { args: [{ ...spec, disablePowerOff: false }] });
  const back = await idle('registered again', (v) => v.operations.filter((o) => o.kind === 'enroll' && o.outcome === 'succeeded').length === 2);
  expect(back.status.provisioning.state).toBe('available');
  expect(await h.ironic.getDisablePowerOff(nodeId)).toBe(false);

  await handle.executeUpdate(applySpecUpdate, { args: [spec] });
  await idle('registered a third time', (v) => v.operations.filter((o) => o.kind === 'enroll' && o.outcome === 'succeeded').length === 3);
  expect(await h.ironic.getDisablePowerOff(nodeId)).toBe(true);
  await h.hosts.remove(ref);
  await handle.result();
  expect(await h.ironic.getNode(nodeId)).toBeUndefined();
}, 600_000);
