/**
 * The agent path for real: a host with a redfish-virtualmedia BMC on
 * sushy-tools, a real ironic-python-agent booted (by the lab's launcher) when
 * Ironic inserts its ISO and powers the system on, running on loop devices in
 * namespaces of its own (test/support/agent-lab.ts, docs/agent-path.md).
 * Agent inspection fills status.hardware without writing to the disk, and
 * provisioning a qcow2 (after Ironic's automated cleaning with the agent)
 * writes the image's bytes and a config drive. Root only; skipped with the
 * reason otherwise.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, readSync, readdirSync, readlinkSync, rmSync, writeFileSync, writeSync, ftruncateSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../config/env';
import type { HostRef, HostSpec } from '../../model/host';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery, type HostView } from '../../contracts/host';
import { agentLabUnavailable, startAgentLab, type AgentLab, type LabHost } from '../support/agent-lab';
import { buildAgentImage, readRange } from '../support/agent-image';
import { sha256 } from '../support/config-drive-iso';
import { FAST_HOST_OPTIONS, randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';

const unavailable = agentLabUnavailable();
if (unavailable) console.warn(`[agent-path] skipped: ${unavailable}`);

const NS = 'agent-path';
const MiB = 2 ** 20;
const IMAGE_BYTES = 8 * MiB;
/** The image's one partition (test/support/agent-image.ts): 1 MiB to 7 MiB, random bytes. */
const PART_START = 1 * MiB;
const PART_END = 7 * MiB;

const hostNamed = (name: string): LabHost => ({ name, uuid: randomUUID(), mac: randomMac(), disks: ['8G'] });

describe.skipIf(unavailable !== undefined)('the agent path with a real ironic-python-agent on loop devices', () => {
  const host = hostNamed(uniq('ap'));
  const ref: HostRef = { namespace: NS, name: host.name };
  let lab: AgentLab;
  let h: Harness;
  let images: Server;
  let imageUrl = '';
  let raw: Buffer;
  let qcow2: Buffer;
  const work = mkdtempSync(join(tmpdir(), 'mf-agent-path-'));

  beforeAll(async () => {
    ({ raw, qcow2 } = buildAgentImage(work));
    images = createServer((req, res) => {
      if (req.url !== '/image.qcow2') return void res.writeHead(404).end();
      res.writeHead(200, { 'content-length': qcow2.length, 'content-type': 'application/octet-stream' });
      res.end(req.method === 'HEAD' ? undefined : qcow2);
    });
    await new Promise<void>((r) => images.listen(0, '127.0.0.1', r));
    const imagePort = (images.address() as AddressInfo).port;
    imageUrl = `http://127.0.0.1:${imagePort}/image.qcow2`;

    lab = await startAgentLab('agent-path', [host], [imagePort]);
    // A mark at the start of the disk before the first boot: inspection must leave it.
    mkdirSync(lab.hostDir(host), { recursive: true });
    const disk = openSync(lab.diskFile(host), 'w');
    ftruncateSync(disk, 8 * 2 ** 30);
    writeSync(disk, Buffer.alloc(64 * 1024, 'METALFLOW-MARK '), 0, 64 * 1024, 0);
    closeSync(disk);
    h = await startHarness({ ironicUrl: lab.ironicUrl, hostOptions: { ...FAST_HOST_OPTIONS }, inspection: 'agent' });
  }, 300_000);

  afterAll(async () => {
    await h?.close();
    await lab?.close();
    images?.close();
    rmSync(work, { recursive: true, force: true });
  }, 120_000);

  const view = (): Promise<HostView> => h.client.workflow.getHandle(hostWorkflowId(ref)).query(hostViewQuery);
  const idle = (what: string, ok: (v: HostView) => boolean, timeoutMs = 600_000) =>
    waitFor(what, async () => {
      const v = await view();
      if (v.status.errorType) throw new Error(`${what}: host error ${v.status.errorType}: ${v.status.errorMessage}`);
      return !v.currentOperation && ok(v) ? v : undefined;
    }, { timeoutMs, intervalMs: 1000 });

  it('inspects with the agent: status.hardware and Ironic name only the loop device, and the disk is not written', async () => {
    const spec: HostSpec = {
      bmc: { address: lab.bmcAddress(host), credentialsName: `${host.name}-bmc` },
      bootMACAddress: host.mac,
      bootMode: 'UEFI',
      online: false,
    };
    await h.hosts.put(ref, { spec, credentials: { username: 'admin', password: 'password' } });
    const available = await idle('available after agent inspection', (v) => v.status.provisioning.state === 'available');

    const hw = available.status.hardware;
    expect(hw?.nics?.map((n) => n.mac)).toEqual([host.mac]);
    const storage = hw?.storage ?? [];
    expect(storage.length).toBe(1);
    expect(storage[0]?.name).toMatch(/^\/dev\/loop\d+$/);
    expect(storage[0]?.sizeBytes).toBe(8 * 2 ** 30);
    // Loop numbers change from boot to boot; the serial (the backing file's name) does not.
    expect(storage[0]?.serialNumber).toBe('disk0');
    // Ironic's own record of what the agent sent: loop devices only.
    const nodeId = available.status.provisioning.ID;
    const inventory = (await (await fetch(`${lab.ironicUrl}/v1/nodes/${nodeId}/inventory`, { headers: { 'X-OpenStack-Ironic-API-Version': '1.115' } })).json()) as {
      inventory: { disks: { name: string }[]; interfaces: { mac_address: string }[] };
    };
    expect(inventory.inventory.disks.map((d) => d.name)).toEqual([storage[0]?.name]);
    expect(inventory.inventory.interfaces.map((i) => i.mac_address)).toEqual([host.mac]);

    // The agent was booted from the ISO Ironic built (its kernel command line) and stopped at power off.
    const events = await waitFor('the agent stopped after inspection', async () => {
      const mine = lab.events().filter((e) => e.host === host.name);
      return mine.length >= 2 ? mine : undefined;
    });
    expect(events.slice(0, 2).map((e) => e.action)).toEqual(['started', 'stopped']);
    expect(events[0]?.cmdline).toMatch(/ipa-api-url=http:\/\/127\.0\.0\.1:\d+/);
    // A credential on the command line (Ironic's agent token) is not written to the launcher's log.
    expect(JSON.stringify(lab.events())).not.toMatch(/(token|password)=(?!<redacted>)/i);

    // Inspection reads the disk and writes nothing.
    const d = openSync(lab.diskFile(host), 'r');
    const head = Buffer.alloc(16);
    readSync(d, head, 0, head.length, 0);
    closeSync(d);
    expect(head.toString()).toBe('METALFLOW-MARK M');
  }, 900_000);

  it('provisions a qcow2: the disk holds the image bytes and a config drive with the host data', async () => {
    await h.secrets.write(NS, `${host.name}-ud`, { userData: '#cloud-config\nhostname: agent-path\n' });
    const networkData = { links: [{ id: 'eth0', type: 'phy', ethernet_mac_address: host.mac }], networks: [], services: [] };
    await h.secrets.write(NS, `${host.name}-nd`, { networkData: JSON.stringify(networkData) });
    const current = await view();
    // Loop numbers change from boot to boot; the serial (the backing file's name) does not.
    expect(current.status.hardware?.storage?.[0]?.serialNumber).toBe('disk0');
    await h.hosts.put(ref, {
      spec: {
        ...current.spec,
        online: true,
        // The hint must pick the loop device: the default (/dev/sda) names no disk this host has.
        rootDeviceHints: { serialNumber: 'disk0' },
        image: { url: imageUrl, checksum: sha256(qcow2), checksumType: 'sha256', format: 'qcow2' },
        userData: { name: `${host.name}-ud` },
        networkData: { name: `${host.name}-nd` },
      },
    });
    const provisioned = await idle('provisioned through the agent', (v) => v.status.provisioning.state === 'provisioned', 900_000);
    // The states the fake agent is held to (fake-agent-states.test.ts): still the real agent's.
    const recorded = JSON.parse(readFileSync(join(REPO_ROOT, 'test', 'fixtures', 'agent-path', 'provision-states.json'), 'utf8')) as { states: string[] };
    expect(lab.provisionStates(provisioned.status.provisioning.ID)).toEqual(recorded.states);
    // Booted three times in all: inspection, Ironic's automated cleaning before the deploy, the deploy.
    const events = await waitFor('the agent stopped after the deploy', async () => {
      const mine = lab.events().filter((e) => e.host === host.name);
      return mine.length >= 6 ? mine : undefined;
    });
    expect(events.map((e) => e.action)).toEqual(['started', 'stopped', 'started', 'stopped', 'started', 'stopped']);

    const disk = readDiskPrefix(lab.diskFile(host), IMAGE_BYTES);
    // The partition's bytes are the image's, exactly.
    expect(sha256(disk.subarray(PART_START, PART_END))).toBe(sha256(raw.subarray(PART_START, PART_END)));
    // The partition table: the image's partition, then the config drive the agent added.
    const parts = partitions(lab.diskFile(host));
    expect(parts[0]).toEqual({ start: PART_START / 512, sectors: (PART_END - PART_START) / 512 });
    expect(parts.length).toBe(2);
    const drive = join(work, 'config-drive.iso');
    writeFileSync(drive, readRange(lab.diskFile(host), parts[1]!.start * 512, parts[1]!.sectors * 512));
    expect(/^Volume id: (.*)$/m.exec(execFileSync('isoinfo', ['-d', '-i', drive], { encoding: 'utf8' }))?.[1]).toBe('config-2');
    const read = (p: string) => execFileSync('isoinfo', ['-R', '-x', p, '-i', drive], { encoding: 'utf8' });
    expect(read('/openstack/latest/user_data')).toBe('#cloud-config\nhostname: agent-path\n');
    expect(JSON.parse(read('/openstack/latest/network_data.json'))).toEqual(networkData);
    expect(JSON.parse(read('/openstack/latest/meta_data.json'))).toMatchObject({ name: host.name });
  }, 1_200_000);

  it('deprovisions with cleaning: the metadata erase zeroes the disk\'s partition tables and MBR, and not the data', async () => {
    const file = lab.diskFile(host);
    const size = 8 * 2 ** 30;
    // A mark in the MBR's boot code (bytes 0-439, which no partition table reads): only an erase removes it.
    const mark = Buffer.alloc(440, 'METALFLOW-MARK ');
    const fd = openSync(file, 'r+');
    writeSync(fd, mark, 0, mark.length, 0);
    closeSync(fd);
    // Before: the image's GPT at the start, the backup the agent moved to the end when it added the config drive.
    expect(readRange(file, 512, 8).toString()).toBe('EFI PART');
    expect(readRange(file, size - 512, 8).toString()).toBe('EFI PART');
    const before = readRange(file, PART_START, PART_END - PART_START);
    expect(sha256(before)).toBe(sha256(raw.subarray(PART_START, PART_END)));

    const current = await view();
    await h.hosts.put(ref, { spec: { ...current.spec, online: true, image: undefined } });
    const available = await idle('available after deprovisioning with cleaning', (v) => v.status.provisioning.state === 'available' && !v.spec?.image, 900_000);
    // A fourth boot of the agent: Ironic's automated cleaning after the undeploy.
    const events = await waitFor('the agent stopped after cleaning', async () => {
      const mine = lab.events().filter((e) => e.host === host.name);
      return mine.length >= 8 ? mine : undefined;
    });
    expect(events.map((e) => e.action).slice(6)).toEqual(['started', 'stopped']);
    const states = lab.provisionStates(available.status.provisioning.ID);
    // Two call-backs, as in the cleaning before the deploy: the agent's clean steps, then the metadata erase.
    expect(states.slice(states.lastIndexOf('deleting'))).toEqual(['deleting', 'cleaning', 'clean wait', 'cleaning', 'clean wait', 'cleaning', 'available']);

    // Metal3's automated cleaning is the metadata erase: the first and last 33 sectors of the disk (both GPTs,
    // the MBR with the mark) are zeroed; the partition's data is left as it was, not shredded.
    const GPT = 33 * 512;
    expect(zeroes(readRange(file, 0, GPT))).toBe(true);
    expect(zeroes(readRange(file, size - GPT, GPT))).toBe(true);
    expect(sha256(readRange(file, PART_START + GPT, PART_END - PART_START - 2 * GPT))).toBe(sha256(before.subarray(GPT, before.length - GPT)));
    // No signature of a partition table or file system is left (blkid's exit status 2: nothing found).
    expect(spawnSync('blkid', ['-p', file]).status).toBe(2);
  }, 1_200_000);

  it('never gave an agent anything but its own loop devices', () => {
    // Every launch of this host's agent listed its disks in the state dir; each is a loop device.
    const loops = readFileSync(join(lab.hostDir(host), 'loops'), 'utf8').trim().split(',');
    expect(loops.every((l) => /^\/dev\/loop\d+$/.test(l))).toBe(true);
    // IPA's `mdadm --assemble --scan` at start-up (its last boot's log) looked at this host's loop devices only:
    // left to its default it opens every device the kernel lists, the machine's disks included.
    const mdadm = readFileSync(join(lab.hostDir(host), 'ipa.log'), 'utf8').split('\n').filter((l) => l.startsWith('mdadm:'));
    expect(mdadm.length).toBeGreaterThan(0);
    expect(mdadm.filter((l) => /device \d+:\d+|\/dev\/(?!loop|md)/.test(l))).toEqual([]);
    // No agent process outlives the lab's power-off (its namespaces are gone with it).
    const agents = readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((p) => {
      try {
        return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(join(lab.hostDir(host), 'ipa.conf'));
      } catch {
        return false;
      }
    });
    expect(agents.map((p) => readlinkSync(`/proc/${p}/exe`))).toEqual([]);
  });
});

const readDiskPrefix = (path: string, length: number): Buffer => readRange(path, 0, length);

const zeroes = (b: Buffer): boolean => b.every((x) => x === 0);

/** The disk file's partitions (start and size in 512-byte sectors), by partx. */
function partitions(path: string): { start: number; sectors: number }[] {
  return execFileSync('partx', ['-g', '-o', 'START,SECTORS', path], { encoding: 'utf8' })
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => l.trim().split(/\s+/).map(Number))
    .map(([start, sectors]) => ({ start: start!, sectors: sectors! }));
}
