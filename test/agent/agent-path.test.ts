/**
 * The agent path for real: hosts with a redfish-virtualmedia BMC on
 * sushy-tools, a real ironic-python-agent booted (by the lab's launcher) when
 * Ironic inserts its ISO and powers the system on, running on loop devices in
 * namespaces of its own (test/support/agent-lab.ts, docs/agent-path.md).
 * One host goes through the lifecycle: agent inspection fills status.hardware
 * without writing to the disk, provisioning a qcow2 (after Ironic's automated
 * cleaning with the agent) writes the image's bytes and a config drive, and
 * deprovisioning cleans with the metadata erase. Beside it, in the same lab,
 * four hosts fail their deploys as users' do (a ramdisk that never comes up,
 * an agent killed while it writes the image, an image whose checksum does
 * not match, a disk too small), without inspection or cleaning: one Ironic
 * and one worker for both, in a lab whose Ironic waits 30 s for an agent's
 * call-back instead of 600. And a host that boots a live ISO: Ironic's ramdisk
 * deploy inserts it into the virtual CD, no agent runs, the disk is untouched.
 * The worker reaches Ironic through the recording
 * proxy (its verbs counted). Root only; skipped with the reason otherwise.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, readSync, readdirSync, readlinkSync, rmSync, writeFileSync, writeSync, ftruncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../config/env';
import type { HostRef, HostSpec, Image } from '../../model/host';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery, type HostView } from '../../contracts/host';
import { agentLabUnavailable, startAgentLab, type AgentLab, type LabHost } from '../support/agent-lab';
import { buildAgentImage, readRange } from '../support/agent-image';
import { sha256 } from '../support/config-drive-iso';
import { startImageServer, type ImageServer } from '../support/image-server';
import { FAST_HOST_OPTIONS, randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';
import { IronicProxy, isDeploy } from '../../bench/support/ironic-proxy';
import { tinyIso } from '../../bench/support/bmc-files';
import { sushyState } from '../support/sushy-state';

const unavailable = agentLabUnavailable();
if (unavailable) console.warn(`[agent-path] skipped: ${unavailable}`);

const NS = 'agent-path';
/** The failing hosts' namespace. */
const NS_F = 'agent-failures';
const MiB = 2 ** 20;
const IMAGE_BYTES = 8 * MiB;
/** The image's one partition (test/support/agent-image.ts): 1 MiB to 7 MiB, random bytes. */
const PART_START = 1 * MiB;
const PART_END = 7 * MiB;

const hostNamed = (name: string): LabHost => ({ name, uuid: randomUUID(), mac: randomMac(), disks: ['8G'] });
const labHost = (prefix: string, disks: string[], withholdBoots?: number): LabHost => ({
  name: uniq(prefix),
  uuid: randomUUID(),
  mac: randomMac(),
  disks,
  ...(withholdBoots ? { withholdBoots } : {}),
});

describe.skipIf(unavailable !== undefined)('the agent path with a real ironic-python-agent on loop devices', () => {
  const host = hostNamed(uniq('ap'));
  const ref: HostRef = { namespace: NS, name: host.name };
  // The failing hosts. Its first boot brings no agent up; the next does. 1 GiB: the agent puts a 64 MiB config drive at the disk's end.
  const late = labHost('af-late', ['1G'], 1);
  // Its first agent is killed while it writes the image.
  const dies = labHost('af-dies', ['1G']);
  const badSum = labHost('af-sum', ['64M']);
  const small = labHost('af-small', ['2G']);
  const failing = [late, dies, badSum, small];
  // A live ISO: Ironic's ramdisk deploy boots it from virtual media; no agent.
  const live = labHost('live', ['64M']);
  const liveRef: HostRef = { namespace: NS, name: live.name };
  const iso = tinyIso();
  let liveDisk = '';
  const refOf = (f: LabHost): HostRef => ({ namespace: NS_F, name: f.name });
  let lab: AgentLab;
  let h: Harness;
  let proxy: IronicProxy;
  let images: ImageServer;
  let imageUrl = '';
  let raw: Buffer;
  let qcow2: Buffer;
  let badSumDisk = '';
  const work = mkdtempSync(join(tmpdir(), 'mf-agent-path-'));

  beforeAll(async () => {
    ({ raw, qcow2 } = buildAgentImage(work));
    images = await startImageServer({
      '/image.qcow2': { body: qcow2, contentType: 'application/octet-stream' },
      // Streamed onto the disk as it downloads (a raw image); the first download stops after 3 MiB and waits there,
      // so that the agent is killed in the middle of its write (a whole 8 MiB comes at once otherwise).
      '/image.raw': { body: raw, contentType: 'application/octet-stream', stall: { afterBytes: 3 * MiB, downloads: 1 } },
      '/live.iso': { body: iso, contentType: 'application/octet-stream' },
    });
    const imagePort = Number(new URL(images.url('/')).port);
    imageUrl = images.url('/image.qcow2');

    lab = await startAgentLab('agent-path', [host, ...failing, live], [imagePort], {
      // The late host's deploy fails after this wait, and the file waits with it. Under a whole run's load the
      // lab's agents called back 4-6 s after a boot and refused the mismatching image (4 tries, ipa-host.sh)
      // within some 12 s: 30 s leaves room for both, and for the lifecycle host's cleaning and deploy.
      stackEnv: { IRONIC_CALLBACK_TIMEOUT: '30', IRONIC_CHECK_PROVISION_STATE_INTERVAL: '5' },
    });
    // A mark at the start of the disk before the first boot: inspection must leave it.
    mkdirSync(lab.hostDir(host), { recursive: true });
    const disk = openSync(lab.diskFile(host), 'w');
    ftruncateSync(disk, 8 * 2 ** 30);
    writeSync(disk, Buffer.alloc(64 * 1024, 'METALFLOW-MARK '), 0, 64 * 1024, 0);
    closeSync(disk);
    // The checksum host's and the live host's disks hold data before their first boot: a refused image, and a
    // live ISO, must leave every byte of it.
    for (const f of [badSum, live]) {
      mkdirSync(lab.hostDir(f), { recursive: true });
      const fd = openSync(lab.diskFile(f), 'w');
      ftruncateSync(fd, 64 * MiB);
      writeSync(fd, Buffer.alloc(MiB, 'METALFLOW-MARK '), 0, MiB, 0);
      closeSync(fd);
    }
    badSumDisk = sha256(readFileSync(lab.diskFile(badSum)));
    liveDisk = sha256(readFileSync(lab.diskFile(live)));

    proxy = new IronicProxy(lab.ironicUrl);
    await proxy.start();
    h = await startHarness({ ironicUrl: proxy.url, hostOptions: { ...FAST_HOST_OPTIONS }, inspection: 'agent' });
    // The failing hosts deploy while the lifecycle host's tests run; each is removed once its failure is seen.
    const good: Image = { url: imageUrl, checksum: sha256(qcow2), checksumType: 'sha256', format: 'qcow2' };
    const spec = (f: LabHost, extra: Partial<HostSpec>): HostSpec => ({
      bmc: { address: lab.bmcAddress(f), credentialsName: `${f.name}-bmc` },
      bootMACAddress: f.mac,
      bootMode: 'UEFI',
      online: true,
      // Inspection and cleaning boot the agent too: left out, each host's first boot is its deploy.
      inspectionMode: 'disabled',
      automatedCleaningMode: 'disabled',
      // Below Ironic's 4 GiB minimum a disk is picked only by a hint.
      rootDeviceHints: { serialNumber: 'disk0' },
      image: good,
      ...extra,
    });
    const credentials = { username: 'admin', password: 'password' };
    await Promise.all([
      h.hosts.put(refOf(late), { spec: spec(late, {}), credentials }),
      h.hosts.put(refOf(dies), { spec: spec(dies, { image: { url: images.url('/image.raw'), checksum: sha256(raw), checksumType: 'sha256', format: 'raw' } }), credentials }),
      h.hosts.put(refOf(badSum), { spec: spec(badSum, { image: { ...good, checksum: sha256(Buffer.from('another image')) } }), credentials }),
      // No hints: Ironic's agent picks the smallest disk of at least 4 GiB, and this host has none.
      h.hosts.put(refOf(small), { spec: spec(small, { rootDeviceHints: {} }), credentials }),
      h.hosts.put(liveRef, { spec: spec(live, { rootDeviceHints: undefined, image: { url: images.url('/live.iso'), format: 'live-iso' } }), credentials }),
    ]);
    outcomes.set(badSum.name, settle(badSum, async (first) => {
      // As BMO: the failed deploy is torn down, counted, and the host provisions again, booting its agent anew.
      const retried = await waitFor('a second attempt booting the agent', async () => {
        const v = await failingView(badSum);
        const boots = actions(badSum).filter((a) => a === 'started').length;
        return (v.status.provisioningFailCount ?? 0) >= 1 && boots >= 2 ? { failCount: v.status.provisioningFailCount ?? 0, boots } : undefined;
      }, { timeoutMs: 300_000, intervalMs: 500 });
      await retire(badSum);
      return { ...first, retried };
    }));
    outcomes.set(small.name, settle(small, async (first) => {
      await retire(small);
      return first;
    }));
    outcomes.set(late.name, settle(late, async (first) => first));
    // The agent is killed once its write is under way: the partition's first MiB on the disk (the download held
    // after 3 MiB keeps it there). What the kill left is read at once; the failure is watched as the others'.
    killed = (async () => {
      await waitFor(`${dies.name}'s agent writing the image`, async () => lab.readAttachedDisk(dies, PART_START, MiB)?.equals(raw.subarray(PART_START, PART_START + MiB)), {
        timeoutMs: 300_000,
        intervalMs: 250,
      });
      const before = actions(dies);
      const agent = await lab.killAgent(dies);
      // The loop device is still attached (the host is on): the agent's writes as they were.
      const left = lab.readAttachedDisk(dies, 0, IMAGE_BYTES);
      if (!left) throw new Error(`${dies.name}'s disk was detached right after its agent was killed`);
      return { ...agent, before, left };
    })();
    killed.catch(() => undefined);
    outcomes.set(dies.name, settle(dies, async (first) => first));
  }, 300_000);

  afterAll(async () => {
    await h?.close();
    await proxy?.stop();
    await lab?.close();
    await images?.close();
    rmSync(work, { recursive: true, force: true });
  }, 120_000);

  const failingView = (f: LabHost): Promise<HostView> => h.client.workflow.getHandle(hostWorkflowId(refOf(f))).query(hostViewQuery);
  const actions = (f: LabHost) => lab.events().filter((e) => e.host === f.name).map((e) => e.action);
  /** Stops a host's further attempts (BMO's retries would boot its agent again and again). */
  const retire = (f: LabHost) => h.hosts.remove(refOf(f)).catch(() => undefined);
  interface Failure {
    view: HostView;
    actions: string[];
    /** The checksum host's retry: its failure count and agent boots when the second boot was seen. */
    retried?: { failCount: number; boots: number };
  }
  /**
   * Each failing host's first failure, watched from the start, then what its test needs done at once (a
   * second attempt seen, the host removed so that it boots no more agents): the hosts fail while the
   * lifecycle host's tests run, and a failure is gone from the status once the retry succeeds. With the
   * launcher's events as they were when it showed.
   */
  const outcomes = new Map<string, Promise<Failure>>();
  /** The dying host's agent: its pid, when it was seen gone, the launcher's actions before, the disk's first 8 MiB after. */
  let killed: Promise<{ pid: number; goneAt: number; before: string[]; left: Buffer }>;
  const outcome = (f: LabHost) => outcomes.get(f.name)!;
  const settle = (f: LabHost, then: (first: Failure) => Promise<Failure>): Promise<Failure> => {
    const seen = waitFor(`${f.name}'s deploy failing`, async () => {
      const v = await failingView(f);
      return v.status.errorType === 'provisioning error' ? { view: v, actions: actions(f) } : undefined;
    }, { timeoutMs: 600_000, intervalMs: 500 }).then(then);
    // Awaited by its test; a timeout before then is that test's failure, not an unhandled rejection.
    seen.catch(() => undefined);
    return seen;
  };

  /** A failing host provisioned on a later attempt, its error and failure count cleared. */
  const provisionedAgain = async (f: LabHost): Promise<HostView> => {
    const provisioned = await waitFor(`${f.name} provisioned on a later boot`, async () => {
      const v = await failingView(f);
      return v.status.provisioning.state === 'provisioned' && !v.currentOperation ? v : undefined;
    }, { timeoutMs: 600_000, intervalMs: 1000 });
    expect(provisioned.status.errorType).toBe('');
    expect(provisioned.status.provisioningFailCount ?? 0).toBe(0);
    return provisioned;
  };

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

  it('an image whose checksum does not match: the agent refuses it before writing, the disk is unchanged, the host retries', async () => {
    const { view: failed, actions: then, retried } = await outcome(badSum);
    expect(failed.status.errorMessage).toMatch(/Image failed to verify against checksum/);
    expect(then[0]).toBe('started');
    // As BMO: the failed deploy was torn down, counted, and the host provisioned again, booting its agent anew
    // (then it was removed); no attempt wrote to the disk.
    expect(retried?.failCount).toBeGreaterThanOrEqual(1);
    expect(retried?.boots).toBeGreaterThanOrEqual(2);
    expect(sha256(readFileSync(lab.diskFile(badSum)))).toBe(badSumDisk);
  }, 900_000);

  it('a disk below 4 GiB and no root device hints: the deploy fails naming the size Ironic needs', async () => {
    const { view: failed } = await outcome(small);
    expect(failed.status.errorMessage).toMatch(/No suitable device was found for deployment/);
    expect(failed.status.errorMessage).toMatch(/smaller than 4294967296B/);
  }, 900_000);

  it('a ramdisk that never comes up: the deploy times out saying so, the host deprovisions and deploys again with its agent', async () => {
    const { view: failed, actions: then } = await outcome(late);
    expect(failed.status.errorMessage).toMatch(/Timeout reached while waiting for callback/);
    expect(then).toEqual(['withheld']);
    const provisioned = await provisionedAgain(late);
    // Ironic's view: the first deploy waited for a call-back and failed, was torn down, and the second went through.
    const states = lab.provisionStates(provisioned.status.provisioning.ID);
    const failedAt = states.indexOf('deploy failed');
    expect(states.slice(failedAt - 1, failedAt + 1)).toEqual(['wait call-back', 'deploy failed']);
    expect(states.slice(failedAt + 1)).toContain('wait call-back');
    expect(states.at(-1)).toBe('active');
    await waitFor('the agent stopped after the deploy', async () => actions(late).length >= 3);
    expect(actions(late)).toEqual(['withheld', 'started', 'stopped']);
    const disk = readRange(lab.diskFile(late), PART_START, PART_END - PART_START);
    expect(sha256(disk)).toBe(sha256(raw.subarray(PART_START, PART_END)));
  }, 900_000);

  it('an agent killed while it writes the image: the deploy times out saying so, the host deprovisions and deploys again, one deploy at a time', async () => {
    const { pid, goneAt, before, left } = await killed;
    expect(pid).toBeGreaterThan(1);
    // Killed during its first boot, mid-write: the image's first 2 MiB (GPT, the partition's first MiB) were on the
    // disk, nothing past the 3 MiB it had downloaded.
    expect(before).toEqual(['started']);
    expect(sha256(left.subarray(0, 2 * MiB))).toBe(sha256(raw.subarray(0, 2 * MiB)));
    expect(zeroes(left.subarray(3 * MiB, PART_END))).toBe(true);

    const { view: failed } = await outcome(dies);
    // Nothing called back after the agent died: Ironic's call-back wait ran out.
    expect(failed.status.errorMessage).toMatch(/Timeout reached while waiting for callback/);
    const provisioned = await provisionedAgain(dies);
    const nodeId = provisioned.status.provisioning.ID;

    // Ironic's view: one deploy waited for the dead agent and failed, was torn down, and only then the second started.
    const states = lab.provisionStates(nodeId);
    const failedAt = states.indexOf('deploy failed');
    expect(states.filter((s) => s === 'deploy failed')).toHaveLength(1);
    expect(states.slice(failedAt - 1, failedAt + 1)).toEqual(['wait call-back', 'deploy failed']);
    const after = states.slice(failedAt + 1);
    expect(after.indexOf('deleting')).toBeGreaterThanOrEqual(0);
    expect(after.indexOf('deleting')).toBeLessThan(after.indexOf('deploying'));
    expect(states.at(-1)).toBe('active');
    // metalflow's verbs for the node: one deploy per attempt, both accepted, the second after the undeploy and
    // after the first agent was gone.
    const verbs = proxy.requests.filter((r) => r.method === 'PUT' && r.path === `/v1/nodes/${nodeId}/states/provision`);
    const targets = verbs.map((r) => (JSON.parse(r.body) as { target: string }).target);
    expect(targets.filter((t) => t === 'active' || t === 'deleted')).toEqual(['active', 'deleted', 'active']);
    const deploys = verbs.filter(isDeploy);
    expect(deploys.map((r) => r.status)).toEqual([202, 202]);
    expect(deploys[1]!.at).toBeGreaterThan(goneAt);

    // The launcher: one agent per boot, the second started after the first was gone and its host powered off.
    await waitFor('the agent stopped after the deploy', async () => actions(dies).length >= 4);
    const events = lab.events().filter((e) => e.host === dies.name);
    expect(events.map((e) => e.action)).toEqual(['started', 'stopped', 'started', 'stopped']);
    expect(events[2]!.time! * 1000).toBeGreaterThan(goneAt);
    // The second boot's agent wrote the whole image.
    expect(sha256(readRange(lab.diskFile(dies), PART_START, PART_END - PART_START))).toBe(sha256(raw.subarray(PART_START, PART_END)));
  }, 900_000);

  it("a live ISO: Ironic's ramdisk deploy boots it from virtual media, no agent runs, the disk is untouched; deprovisioning ejects it and powers off", async () => {
    const liveView = (): Promise<HostView> => h.client.workflow.getHandle(hostWorkflowId(liveRef)).query(hostViewQuery);
    const settled = (what: string, ok: (v: HostView) => boolean) =>
      waitFor(what, async () => {
        const v = await liveView();
        if (v.status.errorType) throw new Error(`${what}: host error ${v.status.errorType}: ${v.status.errorMessage}`);
        return !v.currentOperation && ok(v) ? v : undefined;
      }, { timeoutMs: 600_000, intervalMs: 1000 });
    const provisioned = await settled(`${live.name} provisioned`, (v) => v.status.provisioning.state === 'provisioned');
    const nodeId = provisioned.status.provisioning.ID;
    const node = (await (await fetch(`${lab.ironicUrl}/v1/nodes/${nodeId}`, { headers: { 'X-OpenStack-Ironic-API-Version': '1.115' } })).json()) as Record<string, any>;
    expect(node).toMatchObject({ deploy_interface: 'ramdisk', boot_interface: 'redfish-virtual-media', instance_info: { boot_iso: images.url('/live.iso') } });
    // Deployed without waiting for anything to call back.
    const states = lab.provisionStates(nodeId);
    expect(states.at(-1)).toBe('active');
    expect(states).not.toContain('wait call-back');
    // sushy's own view: powered on, booting the CD, which holds Ironic's published copy of the ISO, byte for byte.
    const system = `/redfish/v1/Systems/${live.uuid}`;
    const bmc = await sushyState(lab.sushyUrl, system);
    expect(bmc).toMatchObject({ power: 'On', bootTarget: 'Cd', inserted: true });
    expect(bmc.image).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/.+\.iso$/);
    expect(sha256(Buffer.from(await (await fetch(bmc.image!)).arrayBuffer()))).toBe(sha256(iso));
    // The launcher saw the host boot that ISO (its volume id) and started no agent; the disk is as it was.
    const booted = lab.events().filter((e) => e.host === live.name);
    expect(booted.length).toBeGreaterThanOrEqual(1);
    expect(booted.every((e) => e.action === 'booted-iso' && e.volume === 'MFTEST')).toBe(true);
    expect(sha256(readFileSync(lab.diskFile(live)))).toBe(liveDisk);

    const seen = lab.bmcStates(live).length;
    await h.hosts.put(liveRef, { spec: { ...provisioned.spec, online: true, image: undefined } });
    await settled(`${live.name} available again`, (v) => v.status.provisioning.state === 'available' && !v.spec?.image);
    // Ironic's tear-down powered the host off with the ISO still in, then ejected it; spec.online keeps it on after.
    const after = await waitFor('the CD ejected in the launcher\'s record', async () => {
      const since = lab.bmcStates(live).slice(seen);
      return since.some((s) => !s.cdInserted) ? since : undefined;
    });
    const off = after.findIndex((s) => s.power === 'Off');
    expect(off).toBeGreaterThanOrEqual(0);
    expect(after[off]!.cdInserted).toBe(true);
    expect(after.slice(off).some((s) => s.power === 'Off' && !s.cdInserted)).toBe(true);
    expect(await sushyState(lab.sushyUrl, system)).toMatchObject({ inserted: false, image: null });
    // No boot of anything since, and the disk still untouched.
    expect(lab.events().filter((e) => e.host === live.name)).toEqual(booted);
    expect(sha256(readFileSync(lab.diskFile(live)))).toBe(liveDisk);
  }, 900_000);

  it('never gave an agent anything but its own loop devices', () => {
    for (const f of failing) {
      const loops = readFileSync(join(lab.hostDir(f), 'loops'), 'utf8').trim().split(',');
      expect(loops.length).toBe(1);
      expect(loops[0]).toMatch(/^\/dev\/loop\d+$/);
    }
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
