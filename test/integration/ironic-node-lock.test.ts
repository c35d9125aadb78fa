/**
 * A node Ironic keeps locked: under load, a request that failed inside Ironic
 * (a `database is locked` 500 from its SQLite) left a node's `reservation`
 * set, and Ironic answered every later change 409 NodeLocked until its
 * conductor restarted. metalflow waited that out for as long as it lasted,
 * with nothing in the host's status. Here the real Ironic's node is left in
 * that state (its `reservation` column set to the running conductor's name,
 * what the failed request left), so the 409s are Ironic's own; the test
 * Ironic's other nodes are untouched. The host must report the lock (node,
 * conductor, how long) as an operation error, and carry on once the
 * reservation is released, as a conductor restart does.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HostView } from '../../contracts/host';
import { TEST_STATE_DIR } from '../support/env';
import { FAST_HOST_OPTIONS, randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';

const run = promisify(execFile);
const IRONIC_DB = join(TEST_STATE_DIR, 'ironic', 'ironic.sqlite');
/** Ironic answers a locked node's change after some 3 s of its own retries: two answers make a run past this. */
const LOCK_LIMIT_MS = 4000;

/** Sets (or clears, with null) the node's reservation in Ironic's database; returns the conductor named. */
async function reserve(nodeId: string, holder: 'conductor' | null): Promise<string | null> {
  const script = `import sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
host = c.execute('SELECT hostname FROM conductors WHERE online = 1 ORDER BY id LIMIT 1').fetchone()[0] if sys.argv[3] == 'conductor' else None
n = c.execute('UPDATE nodes SET reservation = ? WHERE uuid = ?', (host, sys.argv[2])).rowcount
if n != 1: sys.exit('no node ' + sys.argv[2])
print(host or '')`;
  const { stdout } = await run('python3', ['-c', script, IRONIC_DB, nodeId, holder ?? 'none']);
  return stdout.trim() || null;
}

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ nodeLockLimitMs: LOCK_LIMIT_MS, hostOptions: { ...FAST_HOST_OPTIONS, powerCheckSeconds: 0 } });
}, 120_000);
afterAll(() => h?.close());

/** A fake-hardware host, on, registered and idle in available; its spec, a view of it and its node. */
async function idleHost(prefix: string) {
  const ref = { namespace: 'node-lock', name: uniq(prefix) };
  const spec = { bmc: { address: `fake://${ref.name}`, credentialsName: `${ref.name}-bmc` }, bootMACAddress: randomMac(), online: true };
  await h.hosts.put(ref, { spec, credentials: { username: 'admin', password: 'pw' } });
  const view = async (): Promise<HostView> => (await h.hosts.get(ref)) as HostView;
  const ready = await waitFor('available, on and idle', async () => {
    const v = await view();
    return v.status.provisioning.state === 'available' && v.status.poweredOn && !v.currentOperation ? v : undefined;
  }, { timeoutMs: 120_000, intervalMs: 500 });
  return { ref, spec, view, nodeId: ready.status.provisioning.ID };
}

describe('a node Ironic keeps locked', () => {
  it('is reported in the host status with its conductor, and the host carries on once it is released', { timeout: 300_000 }, async () => {
    const { ref, spec, view, nodeId } = await idleHost('host');

    const before = (await h.ironic.getNode(nodeId))?.provision_state;
    const conductor = await reserve(nodeId, 'conductor');
    expect(conductor).toBeTruthy();
    let released = false;
    try {
      const image = { url: 'http://127.0.0.1/img.qcow2', checksum: 'c'.repeat(32), checksumType: 'md5' as const, format: 'qcow2' as const };
      await h.hosts.put(ref, { spec: { ...spec, image } });
      const reported = await waitFor('the lock in the host status', async () => {
        const v = await view();
        return v.status.errorMessage.includes('locked') ? v : undefined;
      }, { timeoutMs: 120_000, intervalMs: 500 });
      expect(reported.status.errorType).toBe('provisioning error');
      expect(reported.status.operationalStatus).toBe('error');
      expect(reported.status.errorMessage).toContain(`Ironic node ${nodeId} has been locked by conductor "${conductor}"`);
      expect(reported.status.errorMessage).toMatch(/for \d+ s: every change to it was answered 409/);
      // Nothing got through the lock: the node is as it was.
      expect((await h.ironic.getNode(nodeId))?.provision_state).toBe(before);

      await reserve(nodeId, null);
      released = true;
      const provisioned = await waitFor('provisioned once the lock is gone', async () => {
        const v = await view();
        return v.status.provisioning.state === 'provisioned' && !v.currentOperation ? v : undefined;
      }, { timeoutMs: 180_000, intervalMs: 500 });
      expect(provisioned.status.errorMessage).toBe('');
      expect(provisioned.status.operationalStatus).toBe('OK');
      expect(provisioned.operations.some((o) => o.kind === 'provision' && o.outcome === 'failed' && (o.error ?? '').includes('locked'))).toBe(true);
    } finally {
      if (!released) await reserve(nodeId, null);
    }
    await h.hosts.remove(ref);
    await waitFor('the node deleted', async () => (await h.ironic.getNode(nodeId)) === undefined, { timeoutMs: 180_000 });
  });

  it('fails a power change with the lock named, and powers off once it is released', { timeout: 300_000 }, async () => {
    const { ref, spec, view, nodeId } = await idleHost('power');

    const conductor = await reserve(nodeId, 'conductor');
    let released = false;
    try {
      await h.hosts.put(ref, { spec: { ...spec, online: false } });
      const reported = await waitFor('the lock in the host status', async () => {
        const v = await view();
        return v.status.errorMessage.includes('locked') ? v : undefined;
      }, { timeoutMs: 120_000, intervalMs: 500 });
      expect(reported.status.errorType).toBe('power management error');
      expect(reported.status.errorMessage).toContain(`Ironic node ${nodeId} has been locked by conductor "${conductor}"`);
      expect((await h.ironic.getNode(nodeId))?.power_state).toBe('power on');

      await reserve(nodeId, null);
      released = true;
      const off = await waitFor('powered off once the lock is gone', async () => {
        const v = await view();
        return !v.status.poweredOn && !v.currentOperation && v.status.errorMessage === '' ? v : undefined;
      }, { timeoutMs: 120_000, intervalMs: 500 });
      expect(off.status.operationalStatus).toBe('OK');
      expect((await h.ironic.getNode(nodeId))?.power_state).toBe('power off');
    } finally {
      if (!released) await reserve(nodeId, null);
    }
    await h.hosts.remove(ref);
    await waitFor('the node deleted', async () => (await h.ironic.getNode(nodeId)) === undefined, { timeoutMs: 180_000 });
  });
});
