/**
 * A lease on a name, kept as files in a folder every holder shares (the local
 * secret store's): what lets API replicas change one host's secrets one at a
 * time, as the in-process queue does within one process.
 *
 * Each grant is a generation: a file `<n>` created with `link()`, which fails
 * when the file exists, so for a given generation exactly one process wins.
 * Whoever created the highest generation holds the lease until it writes
 * `released` into it or stops renewing it. A generation is never reused (the
 * highest file is never removed), so a process that saw generation n free can
 * only ever take n + 1, and only once.
 *
 * Staleness is judged by the waiter's own clock: a holder's file that has not
 * changed for `ttlMs` since the waiter first saw it is taken over. No two
 * machines' clocks are compared. The holder renews every `ttlMs / 3` and
 * counts itself as holding only while its last renewal is younger than
 * `ttlMs / 2` by its clock and no newer generation exists (`check()`).
 */
import { randomBytes } from 'node:crypto';
import { link, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface Lease {
  /** Throws `LeaseLost` when the lease may be another's now; call before each step it protects. */
  check(): Promise<void>;
  /** Gives the lease up at once (idempotent). */
  release(): Promise<void>;
}

export interface LeaseOptions {
  /** How long to wait for a lease another process holds before `LeaseBusy`. */
  waitMs: number;
  /** Called when the lease is found held by another process and this call starts waiting; `done` when it stops. */
  onWait?: (done: boolean) => void;
}

export class LeaseBusy extends Error {}
export class LeaseLost extends Error {}

interface Grant {
  holder: string;
  /** Bumped by each renewal: a waiter sees it change while the holder lives. */
  renewals: number;
  ttlMs: number;
  released?: true;
}

const GENERATION = /^\d+$/;
const POLL_MIN_MS = 10;
const POLL_MAX_MS = 250;
export const DEFAULT_LEASE_TTL_MS = 15_000;

const errno = (err: unknown): string | undefined => (err as NodeJS.ErrnoException).code;

export class FileLeases {
  constructor(
    private readonly dir: string,
    private readonly ttlMs = DEFAULT_LEASE_TTL_MS,
  ) {}

  async acquire(key: string, opts: LeaseOptions): Promise<Lease> {
    const dir = join(this.dir, key);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const holder = `${process.pid}.${randomBytes(8).toString('hex')}`;
    const deadline = Date.now() + opts.waitMs;
    /** The other holder's grant as this waiter last saw it, and since when (this clock). */
    let seen: { generation: number; renewals: number; since: number } | undefined;
    let waiting = false;
    let pause = POLL_MIN_MS;
    try {
      for (;;) {
        const top = await this.highest(dir);
        const grant = top === 0 ? undefined : await this.read(dir, top);
        if (top > 0 && grant === undefined) continue; // replaced between the listing and the read
        let free = top === 0 || grant?.released === true;
        if (!free && grant) {
          if (seen?.generation !== top || seen.renewals !== grant.renewals) seen = { generation: top, renewals: grant.renewals, since: Date.now() };
          else if (Date.now() - seen.since > grant.ttlMs) free = true;
        }
        if (free) {
          const generation = top + 1;
          if (await this.create(dir, generation, { holder, renewals: 0, ttlMs: this.ttlMs })) {
            await this.prune(dir, generation);
            return new HeldLease(dir, generation, holder, this.ttlMs, (d, g) => this.highest(d, g));
          }
          continue; // another process took it first
        }
        if (Date.now() > deadline) throw new LeaseBusy(`${key} is held by another process`);
        if (!waiting) {
          waiting = true;
          opts.onWait?.(false);
        }
        await new Promise((r) => setTimeout(r, pause));
        pause = Math.min(POLL_MAX_MS, pause * 2);
      }
    } finally {
      if (waiting) opts.onWait?.(true);
    }
  }

  /** The highest generation in `dir` (0 for none); `above`: stop at the first one higher than it. */
  private async highest(dir: string, above?: number): Promise<number> {
    let max = 0;
    for (const f of await readdir(dir)) {
      if (!GENERATION.test(f)) continue;
      const n = Number(f);
      if (above !== undefined && n > above) return n;
      if (n > max) max = n;
    }
    return max;
  }

  private async read(dir: string, generation: number): Promise<Grant | undefined> {
    try {
      return JSON.parse(await readFile(join(dir, String(generation)), 'utf8')) as Grant;
    } catch (err) {
      if (errno(err) === 'ENOENT') return undefined;
      throw err;
    }
  }

  /** Creates generation `n` whole (written aside, then linked): false when it exists. */
  private async create(dir: string, n: number, grant: Grant): Promise<boolean> {
    const tmp = join(dir, `.${grant.holder}.tmp`);
    await writeFile(tmp, JSON.stringify(grant), { mode: 0o600 });
    try {
      await link(tmp, join(dir, String(n)));
      return true;
    } catch (err) {
      if (errno(err) === 'EEXIST') return false;
      throw err;
    } finally {
      await rm(tmp, { force: true });
    }
  }

  /** Generations below the current one are never read again as the highest. */
  private async prune(dir: string, current: number): Promise<void> {
    for (const f of await readdir(dir)) {
      if (GENERATION.test(f) && Number(f) < current) await rm(join(dir, f), { force: true });
    }
  }
}

class HeldLease implements Lease {
  private renewals = 0;
  private renewedAt = Date.now();
  private lost = false;
  private done = false;
  private readonly timer: NodeJS.Timeout;
  private renewing: Promise<void> = Promise.resolve();

  constructor(
    private readonly dir: string,
    private readonly generation: number,
    private readonly holder: string,
    private readonly ttlMs: number,
    private readonly newer: (dir: string, above: number) => Promise<number>,
  ) {
    this.timer = setInterval(() => {
      this.renewing = this.renewing.then(() => this.renew()).catch(() => {
        this.lost = true;
      });
    }, Math.max(1, Math.floor(ttlMs / 3)));
    this.timer.unref();
  }

  private async write(grant: Grant): Promise<void> {
    const tmp = join(this.dir, `.${this.holder}.tmp`);
    await writeFile(tmp, JSON.stringify(grant), { mode: 0o600 });
    await rename(tmp, join(this.dir, String(this.generation)));
  }

  private async renew(): Promise<void> {
    if (this.done || this.lost) return;
    if ((await this.newer(this.dir, this.generation)) > this.generation) {
      this.lost = true;
      return;
    }
    const at = Date.now();
    await this.write({ holder: this.holder, renewals: ++this.renewals, ttlMs: this.ttlMs });
    this.renewedAt = at;
  }

  async check(): Promise<void> {
    const stale = Date.now() - this.renewedAt > this.ttlMs / 2;
    if (this.lost || stale || (await this.newer(this.dir, this.generation)) > this.generation) {
      this.lost = true;
      throw new LeaseLost('the lease was not renewed in time and may be held by another process now');
    }
  }

  async release(): Promise<void> {
    if (this.done) return;
    this.done = true;
    clearInterval(this.timer);
    await this.renewing;
    // A lease already taken over is the other holder's file now: left alone.
    if (this.lost || (await this.newer(this.dir, this.generation)) > this.generation) return;
    await this.write({ holder: this.holder, renewals: this.renewals + 1, ttlMs: this.ttlMs, released: true });
  }
}
