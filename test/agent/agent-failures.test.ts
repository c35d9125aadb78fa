/**
 * The agent path's failures as users meet them, with the real agent on loop
 * devices (test/support/agent-lab.ts, docs/agent-path.md): a ramdisk that
 * never comes up, an image whose checksum does not match, a disk too small
 * for Ironic's choice of a root disk. Three hosts deploy at once, without
 * inspection or cleaning (agent-path.test.ts covers those), in a lab whose
 * Ironic waits 30 s for an agent's call-back instead of 600. Root only;
 * skipped with the reason otherwise.
 */
import { randomUUID } from 'node:crypto';
import { closeSync, ftruncateSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HostRef, HostSpec, Image } from '../../model/host';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery, type HostView } from '../../contracts/host';
import { agentLabUnavailable, startAgentLab, type AgentLab, type LabHost } from '../support/agent-lab';
import { buildAgentImage, readRange, type AgentImage } from '../support/agent-image';
import { sha256 } from '../support/config-drive-iso';
import { startImageServer, type ImageServer } from '../support/image-server';
import { FAST_HOST_OPTIONS, randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';

const unavailable = agentLabUnavailable();
if (unavailable) console.warn(`[agent-failures] skipped: ${unavailable}`);

const NS = 'agent-failures';
const MiB = 2 ** 20;
const labHost = (prefix: string, disks: string[], withholdBoots?: number): LabHost => ({
  name: uniq(prefix),
  uuid: randomUUID(),
  mac: randomMac(),
  disks,
  ...(withholdBoots ? { withholdBoots } : {}),
});

describe.skipIf(unavailable !== undefined)('the agent path failing as it does for users, with a real agent', () => {
  // Its first boot brings no agent up; the next does. 1 GiB: the agent puts a 64 MiB config drive at the disk's end.
  const late = labHost('af-late', ['1G'], 1);
  const badSum = labHost('af-sum', ['64M']);
  const small = labHost('af-small', ['2G']);
  const hosts = [late, badSum, small];
  const refOf = (host: LabHost): HostRef => ({ namespace: NS, name: host.name });
  let lab: AgentLab;
  let h: Harness;
  let server: ImageServer;
  let image: AgentImage;
  let badSumDisk = '';
  const work = mkdtempSync(join(tmpdir(), 'mf-agent-failures-'));

  beforeAll(async () => {
    image = buildAgentImage(work);
    server = await startImageServer({ '/image.qcow2': { body: image.qcow2, contentType: 'application/octet-stream' } });
    const imagePort = Number(new URL(server.url('/')).port);
    lab = await startAgentLab('agent-failures', hosts, [imagePort], {
      // The late host's deploy fails after this wait, and the file waits with it. Under a whole run's load the
      // lab's agents called back 4-6 s after a boot and refused the mismatching image (4 tries, ipa-host.sh)
      // within some 12 s: 30 s leaves room for both.
      stackEnv: { IRONIC_CALLBACK_TIMEOUT: '30', IRONIC_CHECK_PROVISION_STATE_INTERVAL: '5' },
    });
    // The checksum host's disk holds data before its first boot: a refused image must leave every byte of it.
    mkdirSync(lab.hostDir(badSum), { recursive: true });
    const fd = openSync(lab.diskFile(badSum), 'w');
    ftruncateSync(fd, 64 * MiB);
    writeSync(fd, Buffer.alloc(MiB, 'METALFLOW-MARK '), 0, MiB, 0);
    closeSync(fd);
    badSumDisk = sha256(readFileSync(lab.diskFile(badSum)));

    h = await startHarness({ ironicUrl: lab.ironicUrl, hostOptions: { ...FAST_HOST_OPTIONS } });
    const good: Image = { url: server.url('/image.qcow2'), checksum: sha256(image.qcow2), checksumType: 'sha256', format: 'qcow2' };
    const spec = (host: LabHost, extra: Partial<HostSpec>): HostSpec => ({
      bmc: { address: lab.bmcAddress(host), credentialsName: `${host.name}-bmc` },
      bootMACAddress: host.mac,
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
      h.hosts.put(refOf(badSum), { spec: spec(badSum, { image: { ...good, checksum: sha256(Buffer.from('another image')) } }), credentials }),
      // No hints: Ironic's agent picks the smallest disk of at least 4 GiB, and this host has none.
      h.hosts.put(refOf(small), { spec: spec(small, { rootDeviceHints: {} }), credentials }),
    ]);
    for (const host of hosts) watchFailure(host);
  }, 300_000);

  afterAll(async () => {
    await h?.close();
    await lab?.close();
    await server?.close();
    rmSync(work, { recursive: true, force: true });
  }, 120_000);

  const view = (host: LabHost): Promise<HostView> => h.client.workflow.getHandle(hostWorkflowId(refOf(host))).query(hostViewQuery);
  const actions = (host: LabHost) => lab.events().filter((e) => e.host === host.name).map((e) => e.action);
  /**
   * Each host's first failure, watched from the start: the hosts fail at once while the tests read them one
   * after another, and a failure is gone from the status once the retry succeeds. With the launcher's
   * events as they were when it showed.
   */
  const failures = new Map<string, Promise<{ view: HostView; actions: string[] }>>();
  const failure = (host: LabHost) => failures.get(host.name)!;
  const watchFailure = (host: LabHost) => {
    const seen = waitFor(`${host.name}'s deploy failing`, async () => {
      const v = await view(host);
      return v.status.errorType === 'provisioning error' ? { view: v, actions: actions(host) } : undefined;
    }, { timeoutMs: 600_000, intervalMs: 500 });
    // Awaited by its test; a timeout before then is that test's failure, not an unhandled rejection.
    seen.catch(() => undefined);
    failures.set(host.name, seen);
  };
  /** Stops a host's further attempts (BMO's retries would boot its agent again and again). */
  const retire = (host: LabHost) => h.hosts.remove(refOf(host)).catch(() => undefined);

  it('an image whose checksum does not match: the agent refuses it before writing, the disk is unchanged, the host retries', async () => {
    const { view: failed, actions: then } = await failure(badSum);
    expect(failed.status.errorMessage).toMatch(/Image failed to verify against checksum/);
    expect(then[0]).toBe('started');
    expect(sha256(readFileSync(lab.diskFile(badSum)))).toBe(badSumDisk);
    // As BMO: the failed deploy is torn down, counted, and the host provisions again, booting its agent anew.
    await waitFor('a second attempt booting the agent', async () => {
      const v = await view(badSum);
      return (v.status.provisioningFailCount ?? 0) >= 1 && actions(badSum).filter((a) => a === 'started').length >= 2;
    }, { timeoutMs: 300_000, intervalMs: 500 });
    await retire(badSum);
  }, 900_000);

  it('a disk below 4 GiB and no root device hints: the deploy fails naming the size Ironic needs', async () => {
    const { view: failed } = await failure(small);
    expect(failed.status.errorMessage).toMatch(/No suitable device was found for deployment/);
    expect(failed.status.errorMessage).toMatch(/smaller than 4294967296B/);
    await retire(small);
  }, 900_000);

  it('a ramdisk that never comes up: the deploy times out saying so, the host deprovisions and deploys again with its agent', async () => {
    const { view: failed, actions: then } = await failure(late);
    expect(failed.status.errorMessage).toMatch(/Timeout reached while waiting for callback/);
    expect(then).toEqual(['withheld']);
    const provisioned = await waitFor('provisioned on the second boot', async () => {
      const v = await view(late);
      return v.status.provisioning.state === 'provisioned' && !v.currentOperation ? v : undefined;
    }, { timeoutMs: 600_000, intervalMs: 1000 });
    expect(provisioned.status.errorType).toBe('');
    expect(provisioned.status.provisioningFailCount ?? 0).toBe(0);
    // Ironic's view: the first deploy waited for a call-back and failed, was torn down, and the second went through.
    const states = lab.provisionStates(provisioned.status.provisioning.ID);
    const failedAt = states.indexOf('deploy failed');
    expect(states.slice(failedAt - 1, failedAt + 1)).toEqual(['wait call-back', 'deploy failed']);
    expect(states.slice(failedAt + 1)).toContain('wait call-back');
    expect(states.at(-1)).toBe('active');
    await waitFor('the agent stopped after the deploy', async () => actions(late).length >= 3);
    expect(actions(late)).toEqual(['withheld', 'started', 'stopped']);
    const disk = readRange(lab.diskFile(late), image.partStart, image.partEnd - image.partStart);
    expect(sha256(disk)).toBe(sha256(image.raw.subarray(image.partStart, image.partEnd)));
  }, 900_000);

  it('never gave an agent anything but its own loop devices', () => {
    for (const host of [late, badSum, small]) {
      const loops = readFileSync(join(lab.hostDir(host), 'loops'), 'utf8').trim().split(',');
      expect(loops.length).toBe(1);
      expect(loops[0]).toMatch(/^\/dev\/loop\d+$/);
    }
  });
});
