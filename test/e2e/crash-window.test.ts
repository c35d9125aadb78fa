/**
 * The crash window itself: a worker process killed after Ironic accepted a
 * verb and before the worker heard the answer (the proxy holds the answer
 * and kills the worker). The next worker must not send it again.
 */
import { describe, expect, it } from 'vitest';
import type { ChildProcess } from 'node:child_process';
import { IronicClient } from '../../clients/ironic/client';
import type { HostSpec } from '../../model/host';
import { IRONIC_URL } from '../support/env';
import { isDeploy, isPowerChange, reachedPeer, type RecordedRequest } from '../../bench/support/ironic-proxy';
import { randomMac, uniq, waitFor } from '../support/harness';
import { useCrashWindow } from '../support/crash-window';

const cw = useCrashWindow('window', { keepWorker: true });
const ironic = new IronicClient({ url: IRONIC_URL });

const spec = (name: string, over: Partial<HostSpec> = {}): HostSpec => ({
  bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc-secret` },
  bootMACAddress: randomMac(),
  online: true,
  ...over,
});

async function killedOnAnswer(worker: ChildProcess): Promise<void> {
  worker.kill('SIGKILL');
  await waitFor('the worker to die', async () => worker.signalCode === 'SIGKILL');
}

const forNode = (nodeId: string, match: (r: RecordedRequest) => boolean) => (r: RecordedRequest) => match(r) && r.path.includes(nodeId);

type Ready = { ref: { namespace: string; name: string }; nodeId: string };
/** A host a test left available, on and idle, for the next test that needs one: a registration less. */
let spare: Ready | undefined;

/**
 * An available host on the live worker: the spare when it is still available, on and idle, else a new one.
 * Cleaning would go through the agent too (a failed deploy is torn down): registered without it.
 */
async function availableHost(prefix: string): Promise<Ready> {
  const kept = spare;
  spare = undefined;
  if (kept) {
    const v = await cw.hosts.get(kept.ref);
    if (v.status.provisioning.state === 'available' && v.status.poweredOn && !v.currentOperation) return kept;
  }
  const ref = { namespace: 'window', name: uniq(prefix) };
  await cw.hosts.put(ref, { spec: spec(ref.name, { automatedCleaningMode: 'disabled' }), credentials: { username: 'admin', password: 'pw' } });
  const ready = await waitFor('available and on', async () => {
    const v = await cw.hosts.get(ref);
    return v.status.provisioning.state === 'available' && v.status.poweredOn && !v.currentOperation ? v : undefined;
  }, { timeoutMs: 90_000 });
  return { ref, nodeId: ready.status.provisioning.ID };
}

describe('a worker killed after Ironic accepted a verb', () => {
  it('does not reboot twice', async () => {
    const first = cw.workers.current();
    const { ref, nodeId } = await availableHost('reboot');
    const mark = cw.proxy.requests.length;
    cw.proxy.onceAnswered(forNode(nodeId, isPowerChange), () => killedOnAnswer(first));
    await cw.hosts.reboot(ref, 'hard');
    await waitFor('the first worker to die', async () => first.signalCode === 'SIGKILL', { timeoutMs: 60_000 });
    cw.workers.start();
    await cw.expireLost(first);
    const done = await waitFor('the reboot to finish on the next worker', async () => {
      const v = await cw.hosts.get(ref);
      return v.operations.some((o) => o.kind === 'reboot' && o.outcome === 'succeeded') && !v.currentOperation ? v : undefined;
    }, { timeoutMs: 150_000 });
    const targets = cw.proxy.requests.slice(mark).filter(forNode(nodeId, isPowerChange)).map((r) => (JSON.parse(r.body) as { target: string }).target);
    // One request took the host down; the rest only brought it back.
    expect(targets.filter((t) => t !== 'power on')).toHaveLength(1);
    expect(done.status.poweredOn).toBe(true);
    expect((await ironic.getNode(nodeId))?.power_state).toBe('power on');
    spare = { ref, nodeId };
  });

  it("does not reboot in place twice (disablePowerOff: Ironic's rebooting, which no read can tell done from never sent)", async () => {
    const first = cw.workers.current();
    const ref = { namespace: 'window', name: uniq('inplace') };
    await cw.hosts.put(ref, { spec: spec(ref.name, { automatedCleaningMode: 'disabled', disablePowerOff: true }), credentials: { username: 'admin', password: 'pw' } });
    const ready = await waitFor('available and on', async () => {
      const v = await cw.hosts.get(ref);
      return v.status.provisioning.state === 'available' && v.status.poweredOn && !v.currentOperation ? v : undefined;
    }, { timeoutMs: 90_000 });
    const nodeId = ready.status.provisioning.ID;
    const mark = cw.proxy.requests.length;
    cw.proxy.onceAnswered(forNode(nodeId, isPowerChange), () => killedOnAnswer(first));
    await cw.hosts.reboot(ref, 'hard');
    await waitFor('the first worker to die', async () => first.signalCode === 'SIGKILL', { timeoutMs: 60_000 });
    cw.workers.start();
    await cw.expireLost(first);
    const done = await waitFor('the reboot to finish on the next worker', async () => {
      const v = await cw.hosts.get(ref);
      return v.operations.some((o) => o.kind === 'reboot' && o.outcome === 'succeeded') && !v.currentOperation ? v : undefined;
    }, { timeoutMs: 150_000 });
    // The next worker found the reboot marked on the node (the record of its attempt died with the first worker).
    const targets = cw.proxy.requests.slice(mark).filter(forNode(nodeId, isPowerChange)).map((r) => (JSON.parse(r.body) as { target: string }).target);
    expect(targets).toEqual(['rebooting']);
    expect(done.status.poweredOn).toBe(true);
  });

  it('does not send a power change again that Ironic still held unanswered when the worker died (marked on the node first)', async () => {
    const first = cw.workers.current();
    const { ref, nodeId } = await availableHost('queued');
    const mark = cw.proxy.requests.length;
    // The power PUT reaches the proxy and waits there, as in a saturated Ironic's queue; the worker dies meanwhile.
    let release!: () => void;
    const forwardWhen = new Promise<void>((resolve) => (release = resolve));
    cw.proxy.interceptor = (r) => {
      if (!forNode(nodeId, isPowerChange)(r)) return undefined;
      cw.proxy.interceptor = undefined;
      first.kill('SIGKILL');
      return { kind: 'no-answer', ms: 60_000, forward: true, forwardWhen };
    };
    const current = (await cw.hosts.get(ref)).spec!;
    await cw.hosts.put(ref, { spec: { ...current, online: false } });
    await waitFor('the first worker to die', async () => first.signalCode === 'SIGKILL', { timeoutMs: 60_000 });
    // Ironic takes the held change only once the next worker has read the node (and found nothing under way).
    cw.proxy.onceAnswered((r) => r.method === 'GET' && r.path === `/v1/nodes/${nodeId}`, release);
    cw.workers.start();
    await cw.expireLost(first);
    const off = await waitFor('off on the next worker', async () => {
      const v = await cw.hosts.get(ref);
      return !v.currentOperation && v.status.poweredOn === false ? v : undefined;
    }, { timeoutMs: 150_000 });
    const puts = cw.proxy.requests.slice(mark).filter(forNode(nodeId, isPowerChange)).filter(reachedPeer);
    expect(puts.map((r) => (JSON.parse(r.body) as { target: string }).target)).toEqual(['soft power off']);
    expect(off.operations.filter((o) => o.kind === 'power').at(-1)?.outcome).toBe('succeeded');
    expect((await ironic.getNode(nodeId))?.power_state).toBe('power off');
  });

  it('registers one node when the worker died after Ironic created it: the next attempt finds it by its name', async () => {
    const ref = { namespace: 'window', name: uniq('create') };
    const first = cw.workers.current();
    const name = `${ref.namespace}~${ref.name}`;
    const creates = (r: RecordedRequest) => r.method === 'POST' && r.path === '/v1/nodes' && r.body.includes(`"${name}"`);
    cw.proxy.onceAnswered(creates, () => killedOnAnswer(first));
    const created = spec(ref.name);
    await cw.hosts.put(ref, { spec: created, credentials: { username: 'admin', password: 'pw' } });
    await waitFor('the first worker to die', async () => first.signalCode === 'SIGKILL', { timeoutMs: 60_000 });
    cw.workers.start();
    await cw.expireLost(first);
    const ready = await waitFor('available on the next worker', async () => {
      const v = await cw.hosts.get(ref);
      return v.status.provisioning.state === 'available' && !v.currentOperation ? v : undefined;
    }, { timeoutMs: 150_000 });
    // The retry's create met the name taken (409) and went on with the node the first attempt created.
    const node = await ironic.getNode(name);
    expect(ready.status.provisioning.ID).toBe(node?.uuid);
    expect(cw.proxy.count(creates)).toBe(2);
    expect((await ironic.listPorts(node!.uuid)).map((p) => p.address)).toEqual([created.bootMACAddress]);
  });

  it('does not deploy twice after a deploy that failed at once', async () => {
    const first = cw.workers.current();
    // The host the reboot test left, when it is still available.
    const { ref, nodeId } = await availableHost('deploy');
    // Ironic's agent deploy checks the image URL first: nothing listens there, so the deploy fails within a second.
    await ironic.patchNode(nodeId, [{ op: 'replace', path: '/deploy_interface', value: 'direct' }]);
    cw.proxy.onceAnswered(forNode(nodeId, isDeploy), () => killedOnAnswer(first));
    await cw.hosts.setImage(ref, { url: 'http://127.0.0.1:9/nothing.qcow2', checksum: 'f'.repeat(64), checksumType: 'sha256', format: 'qcow2' });
    await waitFor('the first worker to die', async () => first.signalCode === 'SIGKILL', { timeoutMs: 60_000 });
    cw.workers.start();
    await cw.expireLost(first);
    const failed = await waitFor('the provision to fail on the next worker', async () => {
      const v = await cw.hosts.get(ref);
      return v.operations.find((o) => o.kind === 'provision' && o.outcome === 'failed');
    }, { timeoutMs: 150_000 });
    expect(failed.error).toMatch(/deploy failed/);
    expect(cw.proxy.count(forNode(nodeId, isDeploy))).toBe(1);
  });
});
