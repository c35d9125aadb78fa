/**
 * The per-host lease API replicas take in the shared secret store folder, on
 * the real file system: one holder at a time among separate lease objects (as
 * separate processes would be), a dead holder's lease taken over once it stops
 * renewing, a waiter giving up with LeaseBusy, and a holder that lost its
 * lease told so before it writes.
 */
import { mkdtempSync, readdirSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileLeases, LeaseBusy, LeaseLost } from '../../clients/secrets/file-lease';

const folder = () => mkdtempSync(join(tmpdir(), 'metalflow-leases-'));

describe('file leases', () => {
  it('lets one holder in at a time among separate lease objects on one folder', async () => {
    const dir = folder();
    let inside = 0;
    let most = 0;
    let entries = 0;
    await Promise.all(
      Array.from({ length: 6 }, async () => {
        const leases = new FileLeases(dir);
        for (let i = 0; i < 5; i++) {
          const lease = await leases.acquire('ns/host', { waitMs: 60_000 });
          inside++;
          most = Math.max(most, inside);
          entries++;
          await lease.check();
          // Gives every other contender a turn at the files while this one holds the lease.
          await new Promise((r) => setImmediate(r));
          inside--;
          await lease.release();
        }
      }),
    );
    expect(entries).toBe(30);
    expect(most).toBe(1);
    // Only the newest grant is kept.
    expect(readdirSync(join(dir, 'ns/host')).filter((f) => /^\d+$/.test(f))).toEqual(['30']);
  });

  it('takes over a lease whose holder stopped renewing, and tells a waiter of a live one it is busy', async () => {
    const dir = folder();
    mkdirSync(join(dir, 'ns/dead'), { recursive: true });
    // A holder that died: its grant never changes again.
    writeFileSync(join(dir, 'ns/dead/7'), JSON.stringify({ holder: 'gone', renewals: 3, ttlMs: 200 }));
    // A long grant: check() fails a holder whose renewals stalled past half of it, and a loaded CI machine can stall
    // this process for seconds (a 6 s grant failed so once).
    const lease = await new FileLeases(dir, 60_000).acquire('ns/dead', { waitMs: 60_000 });
    expect(JSON.parse(readFileSync(join(dir, 'ns/dead/8'), 'utf8'))).toMatchObject({ renewals: 0 });

    // Held by `lease` (its grant good for 60 s unless renewed): a waiter gives up after its 1 s.
    let waited = false;
    const busy = await new FileLeases(dir).acquire('ns/dead', { waitMs: 1_000, onWait: (done) => (waited ||= !done) }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(busy).toBeInstanceOf(LeaseBusy);
    expect(waited).toBe(true);
    await lease.check();
    await lease.release();
    // Released: the next one gets it without waiting.
    const next = await new FileLeases(dir).acquire('ns/dead', { waitMs: 0 });
    await next.release();
  });

  it('tells a holder whose lease was taken over, and leaves the new grant alone when it releases', async () => {
    const dir = folder();
    const lease = await new FileLeases(dir).acquire('ns/taken', { waitMs: 0 });
    // What another process writes when it has judged this holder stale.
    const taken = JSON.stringify({ holder: 'other', renewals: 0, ttlMs: 15_000 });
    writeFileSync(join(dir, 'ns/taken/2'), taken);
    await expect(lease.check()).rejects.toBeInstanceOf(LeaseLost);
    await lease.release();
    expect(readFileSync(join(dir, 'ns/taken/2'), 'utf8')).toBe(taken);
  });
});
