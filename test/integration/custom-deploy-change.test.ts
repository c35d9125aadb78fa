/**
 * A provisioned host whose spec.customDeploy.method changes is deprovisioned
 * and provisioned again with the new method, as BMO's provisioningCancelled
 * does (patch custom-deploy-change), on the real dev server and Ironic. A
 * custom deploy cannot finish on fake-hardware (it waits for the agent), so
 * the host deployed with the first method is one re-adopted from a Metal3
 * status (its node deployed on Ironic directly, as BMO leaves it).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { IronicNode } from '../../clients/ironic/types';
import { applySpecUpdate } from '../../contracts/host';
import { adoptedCustomDeployHost } from '../support/deployed-node';
import { FAST_HOST_OPTIONS, startHarness, uniq, waitFor, type Harness } from '../support/harness';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
}, 120_000);
afterAll(() => h?.close());

const NS = 'custom-change';

it('deprovisions a host deployed with one custom deploy method and provisions it with the new one', async () => {
  const ref = { namespace: NS, name: uniq('custom') };
  const { node, spec, handle, until: idle, adopted } = await adoptedCustomDeployHost(h, ref, 'install_a', FAST_HOST_OPTIONS);
  expect(adopted.status.provisioning).toMatchObject({ state: 'provisioned', customDeploy: { method: 'install_a' } });

  await handle.executeUpdate(applySpecUpdate, { args: [{ ...spec, customDeploy: { method: 'install_b' } }] });
  const redeploying = await idle('provisioning with the new method', (v) => v.currentOperation?.kind === 'provision');
  expect(redeploying.operations.map((o) => `${o.kind}:${o.outcome}`).slice(-2)).toEqual(['deprovision:succeeded', 'provision:running']);
  expect(redeploying.status.provisioning.customDeploy).toBeUndefined();
  const deploying = await waitFor('the new deploy waiting for its agent', async () => {
    const n = await h.ironic.getNode(node.uuid);
    return n?.provision_state === 'wait call-back' ? n : undefined;
  }, { timeoutMs: 120_000 });
  expect(deploying.deploy_interface).toBe('custom-agent');
  // Ironic keeps the deploy steps it was given with `active` (user_deploy_steps).
  const internal = (deploying as IronicNode & { driver_internal_info?: Record<string, unknown> }).driver_internal_info;
  expect(JSON.stringify(internal)).toContain('install_b');

  await h.hosts.remove(ref);
  await waitFor('the node deleted', async () => (await h.ironic.getNode(node.uuid)) === undefined, { timeoutMs: 240_000 });
}, 600_000);
