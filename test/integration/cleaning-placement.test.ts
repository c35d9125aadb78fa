/**
 * Cleaning where BMO cleans (issue 16, item 9; patch bmo-cleaning-placement),
 * on the test stack's real Ironic: an available host's node stays
 * `manageable` (preparing runs no automated cleaning), provisioning runs
 * Ironic's `provide` first and so cleans then deploys, honouring
 * `automatedCleaningMode: disabled`. Ironic's own record of it is its
 * conductor log ("Node … moved to provision state …", "Executing automated
 * cleaning on node …"): node history keeps only errors. A Redfish host
 * (sushy-tools) on a stack with no agent ramdisk configured becomes
 * available, and its provisioning fails naming the missing ramdisk.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HostSpec } from '../../model/host';
import type { HostView } from '../../contracts/host';
import { SUSHY_URL, TEST_STATE_DIR } from '../support/env';
import { randomMac, startHarness, uniq, waitFor, FAST_HOST_OPTIONS, type Harness } from '../support/harness';

const NS = 'cleaning';
/** A sushy system only this file provisions (nothing reaches its disk: the deploy is refused first). */
const SYSTEM = '/redfish/v1/Systems/6d660000-0000-4000-8000-000000000006';
const IMAGE = { url: 'http://127.0.0.1/cleaning.qcow2', checksum: 'c'.repeat(64), checksumType: 'sha256' as const, format: 'qcow2' as const };
let h: Harness;

beforeAll(async () => {
  h = await startHarness({ hostOptions: FAST_HOST_OPTIONS });
});
afterAll(async () => {
  await h?.close();
});

type Ref = { namespace: string; name: string };
const settle = <T>(what: string, probe: () => Promise<T | undefined | false>) => waitFor(what, probe, { timeoutMs: 240_000, intervalMs: 500 });
const view = async (ref: Ref): Promise<HostView> => (await h.hosts.get(ref)) as HostView;
const idleIn = (ref: Ref, state: string) =>
  settle(`${ref.name} ${state}`, async () => {
    const v = await view(ref);
    return v.status.provisioning.state === state && !v.currentOperation ? v : undefined;
  });

/** What Ironic's conductor logged about the node: its provision-state moves and its automated cleaning. */
function ironicSaid(nodeId: string): { moves: string[]; cleaned: boolean; cleaningDisabled: boolean } {
  const lines = readFileSync(join(TEST_STATE_DIR, 'logs', 'ironic.log'), 'utf8').split('\n').filter((l) => l.includes(nodeId));
  const moves = lines.flatMap((l) => {
    const m = /moved to provision state "([^"]+)" from state "([^"]+)"/.exec(l);
    return m ? [`${m[2]}->${m[1]}`] : [];
  });
  return {
    moves,
    cleaned: lines.some((l) => l.includes(`Executing automated cleaning on node ${nodeId}`)),
    cleaningDisabled: lines.some((l) => l.includes('Automated cleaning is disabled')),
  };
}

const provisioningError = (ref: Ref) =>
  settle(`${ref.name}'s provisioning error`, async () => {
    const v = await view(ref);
    return v.status.errorType === 'provisioning error' ? v : undefined;
  });

async function availableHost(ref: Ref, over: Partial<HostSpec> = {}, credentials = { username: 'admin', password: 'pw' }): Promise<string> {
  const spec: HostSpec = { bmc: { address: `fake://${ref.name}`, credentialsName: `${ref.name}-bmc` }, bootMACAddress: randomMac(), online: true, ...over };
  await h.hosts.put(ref, { spec, credentials });
  return (await idleIn(ref, 'available')).status.provisioning.ID;
}

describe('cleaning where BMO cleans', { timeout: 600_000 }, () => {
  it('an available host\'s node is manageable and uncleaned; provisioning cleans it, then deploys', async () => {
    const ref = { namespace: NS, name: uniq('clean') };
    const nodeId = await availableHost(ref);
    expect((await h.ironic.getNode(nodeId))?.provision_state).toBe('manageable');
    expect(ironicSaid(nodeId).cleaned).toBe(false);

    await h.hosts.setImage(ref, IMAGE);
    await idleIn(ref, 'provisioned');
    expect((await h.ironic.getNode(nodeId))?.provision_state).toBe('active');
    const said = ironicSaid(nodeId);
    expect(said.cleaned).toBe(true);
    // Cleaned from manageable on the way to the deploy, once.
    const moves = said.moves.filter((m) => !m.startsWith('enroll') && !m.includes('verifying') && !m.includes('inspect'));
    expect(moves.slice(0, 4)).toEqual(['manageable->cleaning', 'cleaning->available', 'available->deploying', 'deploying->active']);
  });

  it('automatedCleaningMode: disabled provisions without a clean step, whatever the node was set to since', async () => {
    const ref = { namespace: NS, name: uniq('noclean') };
    const nodeId = await availableHost(ref, { automatedCleaningMode: 'disabled' });
    expect((await h.ironic.getNode(nodeId))?.provision_state).toBe('manageable');
    // Changed behind metalflow's back: the spec, read again just before the provide, decides (as BMO's Provision).
    await h.ironic.patchNode(nodeId, [{ op: 'add', path: '/automated_clean', value: true }]);
    await h.hosts.setImage(ref, IMAGE);
    await idleIn(ref, 'provisioned');
    const said = ironicSaid(nodeId);
    expect(said.cleaned).toBe(false);
    expect(said.cleaningDisabled).toBe(true);
    expect(said.moves).toContain('available->deploying');
  });

  describe('a Redfish host and no agent ramdisk on this Ironic', () => {
    const redfish = (ref: Ref, over: Partial<HostSpec> = {}): Partial<HostSpec> => ({
      bmc: { address: `redfish-virtualmedia+${SUSHY_URL}${SYSTEM}`, credentialsName: `${ref.name}-bmc` },
      inspectionMode: 'disabled',
      online: false,
      ...over,
    });
    const sushy = { username: 'admin', password: 'password' };
    /** The image with spec.online true: as BMO, a host provisions only while it is wanted on. */
    const provisionOn = async (ref: Ref): Promise<void> => {
      const { spec } = await h.hosts.get(ref);
      await h.hosts.put(ref, { spec: { ...spec!, image: IMAGE, online: true } });
    };

    it('becomes available; its provisioning fails naming the missing ramdisk, for cleaning', async () => {
      const ref = { namespace: NS, name: uniq('rf-clean') };
      const nodeId = await availableHost(ref, redfish(ref), sushy);
      expect((await h.ironic.getNode(nodeId))?.provision_state).toBe('manageable');
      await provisionOn(ref);
      const failed = await provisioningError(ref);
      expect(failed.status.errorMessage).toContain('cleaning needs the agent ramdisk and none is configured');
      expect(failed.status.errorMessage).toContain('deploy_kernel');
      expect(failed.status.errorMessage).toContain('automatedCleaningMode: disabled');
      expect(failed.status.errorMessage).not.toContain('password');
    });

    it('with cleaning disabled, the deploy is refused naming the missing ramdisk', async () => {
      const ref = { namespace: NS, name: uniq('rf-deploy') };
      await availableHost(ref, redfish(ref, { automatedCleaningMode: 'disabled' }), sushy);
      await provisionOn(ref);
      const failed = await provisioningError(ref);
      expect(failed.status.errorMessage).toContain('deploying needs the agent ramdisk and none is configured');
      expect(failed.status.errorMessage).toContain('deploy_ramdisk');
    });
  });
});
