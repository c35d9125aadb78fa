/**
 * A worker killed mid-clean, in the crash window itself: after Ironic accepted
 * the step's `clean` verb and before the worker heard the answer (the proxy
 * holds the answer and kills the worker). The next worker must not start the
 * clean again, and the clean must end once.
 */
import { describe, expect, it } from 'vitest';
import type { CleanRequest } from '../../model/clean';
import type { RecordedRequest } from '../../bench/support/ironic-proxy';
import type { HostView } from '../../contracts/host';
import { randomMac, uniq, waitFor } from '../support/harness';
import { useCrashWindow } from '../support/crash-window';

const cw = useCrashWindow('clean-window', { keepWorker: true });
const NS = 'clean-window';

const isCleanVerb = (nodeId: string) => (r: RecordedRequest) =>
  r.method === 'PUT' && r.path === `/v1/nodes/${nodeId}/states/provision` && (JSON.parse(r.body) as { target?: string }).target === 'clean';

/** The host the last test left available and idle, its clean request done: the next test cleans it again (a registration less). */
let spare: string | undefined;

/** An available host: the spare when it still is, else a new one; its name and node. */
async function availableHost(): Promise<{ name: string; nodeId: string }> {
  const kept = spare;
  spare = undefined;
  const idle = (v: HostView) => v.status.provisioning.state === 'available' && !v.currentOperation && !v.cleanRequest;
  if (kept) {
    const v = await cw.hosts.get({ namespace: NS, name: kept });
    if (idle(v)) return { name: kept, nodeId: v.status.provisioning.ID };
  }
  const name = uniq('clean');
  const ref = { namespace: NS, name };
  await cw.hosts.put(ref, {
    spec: { bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc-secret` }, bootMACAddress: randomMac(), online: true },
    credentials: { username: 'admin', password: 'pw' },
  });
  const ready = await waitFor('available', async () => {
    const v = await cw.hosts.get(ref);
    return idle(v) ? v : undefined;
  }, { timeoutMs: 90_000 });
  return { name, nodeId: ready.status.provisioning.ID };
}

/**
 * A host available on a first worker, which the proxy kills once Ironic has answered the clean verb; a second
 * worker takes over. Its name, its node, and where the proxy's record stood before the clean.
 */
async function cleanCrashed(request: CleanRequest): Promise<{ name: string; nodeId: string; mark: number }> {
  const first = cw.workers.current();
  const { name, nodeId } = await availableHost();
  const mark = cw.proxy.requests.length;
  cw.proxy.onceAnswered(isCleanVerb(nodeId), () => {
    first.kill('SIGKILL');
  });
  await cw.hosts.clean({ namespace: NS, name }, request);
  await waitFor('the first worker to die', async () => first.signalCode === 'SIGKILL', { timeoutMs: 60_000 });
  cw.workers.start();
  // The attempt that sent the clean verb, lost with the worker.
  await cw.expireLost(first);
  return { name, nodeId, mark };
}

const cleanVerbsSince = (nodeId: string, mark: number) => cw.proxy.requests.slice(mark).filter(isCleanVerb(nodeId)).length;

describe('a worker killed after Ironic accepted a clean', () => {
  it('does not clean twice, and the clean ends once', async () => {
    const { name, nodeId, mark } = await cleanCrashed({ steps: [{ name: 'bios', settings: { ProcVirtualization: 'Enabled' } }] });
    const done = await waitFor('the clean done on the next worker', async () => {
      const v = await cw.hosts.get({ namespace: NS, name });
      return v.status.provisioning.state === 'available' && !v.currentOperation && !v.cleanRequest ? v : undefined;
    }, { timeoutMs: 180_000 });
    expect(cleanVerbsSince(nodeId, mark)).toBe(1);
    expect(done.operations.filter((o) => o.kind === 'clean').map((o) => o.outcome)).toEqual(['succeeded']);
    expect(done.status.errorCount).toBe(0);
    spare = name;
  }, 300_000);

  it('does not clean twice after a clean that failed at once, and reports why', async () => {
    // fake-hardware has no erase step: Ironic fails the clean as soon as it starts it.
    const { name, nodeId, mark } = await cleanCrashed({ steps: [{ name: 'erase-metadata' }] });
    const failed = await waitFor('the clean to fail on the next worker', async () => {
      const v = await cw.hosts.get({ namespace: NS, name });
      return v.operations.find((o) => o.kind === 'clean' && o.outcome === 'failed');
    }, { timeoutMs: 180_000 });
    // Ironic's reason, though its power sync may have cleared last_error before the next worker read it (from its node history).
    expect(failed.error).toMatch(/clean step erase-metadata failed: Cannot clean node .*does not support this clean step: .*erase_devices_metadata/);
    expect(cleanVerbsSince(nodeId, mark)).toBe(1);
  }, 300_000);
});
