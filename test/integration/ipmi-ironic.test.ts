/**
 * An `ipmi://` host through Ironic (issue 16, item 15): the project's stack
 * enables Ironic's `ipmi` hardware type (ipmitool power and management, ipxe
 * boot) as Metal3's Ironic image does, and a host whose BMC is `ipmi_sim`
 * registers, becomes available and has its power driven by Ironic's
 * ipmitool, seen in the simulator's own chassis state. The direct path
 * (metalflow's own ipmitool) is tested in power.test.ts and test/bmc/.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IronicClient } from '../../clients/ironic/client';
import type { HostSpec } from '../../model/host';
import { IRONIC_HTTP_URL, IRONIC_URL } from '../support/env';
import { serveFiles, type FileServer } from '../../bench/support/bmc-files';
import { randomMac, startHarness, uniq, waitFor, FAST_HOST_OPTIONS, type Harness } from '../support/harness';
import { IPMI_PASSWORD, IPMI_USER, startIpmiSim, type IpmiSim } from '../bmc/support/ipmi-sim';

const NS = 'ipmi-ironic';
const ironic = new IronicClient({ url: IRONIC_URL });
let h: Harness;
let sim: IpmiSim;
/** A second BMC, for the libvirt:// host. */
let vbmc: IpmiSim;

beforeAll(async () => {
  const port = Number(process.env.TEST_IRONIC_IPMI_PORT ?? 22645);
  sim = await startIpmiSim(port);
  vbmc = await startIpmiSim(port + 1);
  h = await startHarness({ hostOptions: FAST_HOST_OPTIONS });
});
afterAll(async () => {
  await h?.close();
  await sim?.stop();
  await vbmc?.stop();
});

const settle = <T>(what: string, probe: () => Promise<T | undefined | false>) => waitFor(what, probe, { timeoutMs: 180_000 });

/** A host on an IPMI BMC brought to available and powered on; its Ironic node. */
async function availableOn(ref: { namespace: string; name: string }, address: string) {
  const spec: HostSpec = {
    bmc: { address, credentialsName: `${ref.name}-bmc` },
    bootMACAddress: randomMac(),
    online: true,
    // No agent ramdisk on this stack: nothing that would boot one.
    inspectionMode: 'disabled',
    automatedCleaningMode: 'disabled',
  };
  await h.hosts.put(ref, { spec, credentials: { username: IPMI_USER, password: IPMI_PASSWORD } });
  const view = await settle('available and powered on', async () => {
    const v = await h.hosts.get(ref);
    return v.status.provisioning.state === 'available' && v.status.poweredOn && !v.currentOperation ? v : undefined;
  });
  return ironic.getNode(view.status.provisioning.ID);
}

describe('an ipmi:// host on the project stack\'s Ironic', { timeout: 420_000 }, () => {
  const ref = { namespace: NS, name: uniq('ipmi') };
  const vmHost = () => availableOn({ namespace: NS, name: uniq('vm') }, `libvirt://127.0.0.1:${vbmc.port}?privilegelevel=OPERATOR`);
  /** The libvirt:// host, registered beside the first (its own BMC): its test finds it ready; a retry registers another. */
  let vm: ReturnType<typeof vmHost> | undefined;
  beforeAll(() => {
    vm = vmHost();
    vm.catch(() => undefined); // awaited by its test, which reports the failure
  });

  it('registers with the ipmi hardware type and BMO\'s interfaces, and reaches available powered on', async () => {
    const node = await availableOn(ref, `ipmi://127.0.0.1:${sim.port}`);
    expect(node).toMatchObject({ driver: 'ipmi', power_interface: 'ipmitool', management_interface: 'ipmitool', boot_interface: 'ipxe', power_state: 'power on' });
    expect(node?.driver_info).toMatchObject({ ipmi_address: '127.0.0.1', ipmi_port: sim.port, ipmi_username: IPMI_USER, ipmi_priv_level: 'ADMINISTRATOR' });
    // Ironic's ipmitool turned the simulated chassis on.
    expect(sim.file('power')).toBe('1');
  });

  it('powers off (soft, as Metal3 does for online: false) and on through Ironic\'s ipmitool', async () => {
    sim.clearCalls();
    const current = await h.hosts.get(ref);
    await h.hosts.put(ref, { spec: { ...current.spec!, online: false } });
    await settle('powered off', async () => {
      const v = await h.hosts.get(ref);
      return !v.status.poweredOn && !v.currentOperation && sim.file('power') === '0';
    });
    await h.hosts.put(ref, { spec: { ...current.spec!, online: true } });
    await settle('powered on again', async () => {
      const v = await h.hosts.get(ref);
      return v.status.poweredOn && !v.currentOperation && sim.file('power') === '1';
    });
    // Through Ironic (nothing else speaks IPMI to it here): a soft power off (an ACPI shutdown
    // request, `chassis power soft`), never a hard `power 0`, then power 1.
    const sets = sim.calls().filter((c) => c.startsWith('set'));
    expect(sets.filter((c) => c.includes('shutdown'))).toHaveLength(1);
    expect(sets.filter((c) => c.includes('power')).map((c) => /power (\d)/.exec(c)?.[1])).toEqual(['1']);
    expect((await ironic.getNode(current.status.provisioning.ID))?.power_state).toBe('power on');
  });

  it('takes BMO\'s libvirt:// (IPMI with a boot MAC) and ?privilegelevel=, as Ironic\'s ipmi_priv_level', async () => {
    const pending = vm ?? vmHost();
    vm = undefined;
    const node = await pending;
    expect(node).toMatchObject({ driver: 'ipmi', power_interface: 'ipmitool', power_state: 'power on' });
    expect(node?.driver_info).toMatchObject({ ipmi_port: vbmc.port, ipmi_priv_level: 'OPERATOR' });
    // No hardwareProfile: BMO's getHardwareProfileName picks `libvirt` for a libvirt:// BMC (virtio disks).
    expect(node?.properties.root_device).toEqual({ name: 's== /dev/vda' });
    expect(vbmc.file('power')).toBe('1');
  });

  it("runs Ironic's agent inspection through iPXE: the boot script served from the stack's http_url, the host rebooted into it", async () => {
    // The shared stack configures no agent ramdisk (the agent path does): placeholder files on the node, and
    // Ironic driven directly (metalflow's own inspection would set the node's driver_info back to its spec's).
    const files: FileServer = await serveFiles({ 'ipa.kernel': Buffer.from('kernel'), 'ipa.initramfs': Buffer.from('initramfs') });
    const nodeId = (await h.hosts.get(ref)).status.provisioning.ID;
    try {
      await ironic.patchNode(nodeId, [
        { op: 'add', path: '/driver_info/deploy_kernel', value: files.url('ipa.kernel') },
        { op: 'add', path: '/driver_info/deploy_ramdisk', value: files.url('ipa.initramfs') },
      ]);
      sim.clearCalls();
      // Without [deploy] http_url Ironic refuses this at once (iPXE has nowhere to serve its script from).
      await ironic.setProvisionState(nodeId, 'inspect');
      await settle('the inspection waiting for its agent', async () => (await ironic.getNode(nodeId))?.provision_state === 'inspect wait');
      const script = await fetch(`${IRONIC_HTTP_URL}/${nodeId}/config`);
      expect(script.status).toBe(200);
      expect(await script.text()).toMatch(/^#!ipxe/);
      // Rebooted through Ironic's ipmitool into the network boot (the boot device goes by raw commands ipmi_sim keeps to itself).
      expect(sim.calls().filter((c) => c.startsWith('set') && /power 1/.test(c)).length).toBeGreaterThan(0);
    } finally {
      await files.close();
      await ironic.abortProvisioning(nodeId).catch(() => undefined);
      await settle('inspection ended', async () => (await ironic.getNode(nodeId))?.provision_state !== 'inspect wait');
      await ironic.setProvisionState(nodeId, 'manage').catch(() => undefined);
      await ironic.patchNode(nodeId, [{ op: 'remove', path: '/driver_info/deploy_kernel' }, { op: 'remove', path: '/driver_info/deploy_ramdisk' }]);
    }
  });
});
