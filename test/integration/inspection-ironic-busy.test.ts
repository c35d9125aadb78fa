/**
 * Ironic too busy to inspect: under load (the 100-host Redfish bench) its
 * SQLite stays locked by other writers longer than `[database]
 * sqlite_max_wait_for_retry` (10 s), and the conductor's inspection fails
 * with TemporaryFailure when it stores the inventory. Here the real Ironic's
 * database is held locked (a writer's RESERVED lock: reads go on) while a
 * real sushy-tools inspection is under way, behind the fault proxy that only
 * slows the BMC's Processors answer so the lock lands mid-inspection.
 * The inspection must be sent again quietly and succeed; on the old code the
 * activity failed with "inspection failed: … TemporaryFailure". On an Ironic
 * of its own: the lock would fail every other file's Ironic writes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IronicClient } from '../../clients/ironic/client';
import { createIronicActivities } from '../../activities/ironic/activities';
import { LocalSecretStore } from '../../clients/secrets/local-store';
import { REPO_ROOT } from '../../config/env';
import { SUSHY_URL } from '../support/env';
import { ownIronic, type OwnIronic } from '../support/own-ironic';
import { unusedPort } from '../support/ports';
import { IronicProxy } from '../../bench/support/ironic-proxy';
import { uniq } from '../support/harness';

const NS = 'busy-ironic';
const SYSTEM = '/redfish/v1/Systems/6d660000-0000-4000-8000-000000000004';
const LOCK_SECONDS = 20; // longer than Ironic's sqlite_max_wait_for_retry (10 s) plus its busy timeout
const STATE = 'ironic-busy';

let ironicServer: OwnIronic | undefined;
beforeAll(async () => {
  ironicServer = ownIronic(STATE, await unusedPort());
  await ironicServer.start();
}, 120_000);
afterAll(async () => {
  await ironicServer?.stop();
});

/** Holds a write lock on Ironic's database, as a busy Ironic's own writers do; resolves once it is held. */
function lockIronicDb(seconds: number): Promise<ChildProcess> {
  const db = join(REPO_ROOT, '.state', STATE, 'ironic', 'ironic.sqlite');
  const script = `import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=60)
c.execute('BEGIN IMMEDIATE')
print('locked', flush=True)
time.sleep(float(sys.argv[2]))
c.execute('ROLLBACK')`;
  const child = spawn('python3', ['-c', script, db, String(seconds)], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (b: Buffer) => b.toString().includes('locked') && resolve(child));
    child.on('exit', (code) => reject(new Error(`the lock holder exited (${code}) before locking`)));
  });
}

describe('inspection while Ironic is too busy to store it', () => {
  it('is sent again quietly and succeeds (TemporaryFailure is Ironic’s, not the host’s)', { timeout: 300_000 }, async () => {
    const bmc = new IronicProxy(SUSHY_URL);
    await bmc.start();
    const secrets = new LocalSecretStore(mkdtempSync(join(tmpdir(), 'mf-busy-')), randomBytes(32));
    const ironic = new IronicClient({ url: ironicServer!.url });
    const acts = createIronicActivities({ ironic, secrets, poll: { initialMs: 100, factor: 1.5, maxMs: 1000 } });
    const ref = { namespace: NS, name: uniq('redfish') };
    await secrets.write(NS, `${ref.name}-bmc`, { username: 'admin', password: 'password' });
    const spec = {
      bmc: { address: `redfish+${bmc.url}${SYSTEM}`, credentialsName: `${ref.name}-bmc` },
      online: true,
      automatedCleaningMode: 'disabled' as const,
    };
    let locker: ChildProcess | undefined;
    try {
      const { nodeId } = await acts.ensureNode({ ref, spec });
      await acts.manageNode({ ref, nodeId });
      const isProcessors = (r: { method: string; path: string }) => r.method === 'GET' && r.path.startsWith(`${SYSTEM}/Processors`);
      bmc.hold(isProcessors, 3000);
      const inspected = acts.inspectNode({ ref, nodeId }).then(
        (r) => ({ ok: true as const, r }),
        (e: unknown) => ({ ok: false as const, e }),
      );
      // The first inspection is talking to the BMC: lock the database before it stores what it found.
      for (let i = 0; i < 1200 && bmc.count(isProcessors) === 0; i++) await new Promise((r) => setTimeout(r, 100));
      expect(bmc.count(isProcessors)).toBeGreaterThan(0);
      locker = await lockIronicDb(LOCK_SECONDS);
      const outcome = await inspected;
      if (!outcome.ok) throw outcome.e;
      expect(outcome.r.hardware.cpu?.count).toBeGreaterThan(0);
      // The first inspection failed in Ironic (the fault was real) and a second one asked the BMC again.
      expect(bmc.count(isProcessors)).toBeGreaterThanOrEqual(2);
      await acts.deleteNode({ ref, nodeId });
    } finally {
      locker?.kill();
      await bmc.stop();
    }
  });
});
