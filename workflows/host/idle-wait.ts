/**
 * The host workflow's idle wait: what the wait does when it ends is decided by
 * its timer having fired, never by the clock or by what else arrived with the
 * fire.
 *
 * Why: a benchmark of 1,000 hosts (docs/adr/0003-counted-hand-over.md) showed the live worker applying a timer's fire (or an activity's result) in
 * an activation of its own, with the previous task's time and history length,
 * when a query reached the workflow before the task that carries the fire
 * started; an update sent meanwhile came in the next activation. A replay
 * applies the fire with the task's own time and the update in the same
 * activation. Read from the clock, the check was "not due" live (a new timer
 * started) and due on replay (a local activity instead): a nondeterminism error
 * on every later task of that host. Read from the fire, both take the same path.
 *
 * What a fire starts waits for the task that carries
 * it: a query dispatched straight to the worker while the fire was being written
 * brings the fire with it (a stale activation), and whatever that activation
 * commands is completed with the next real task, ahead of an update that task
 * delivers; a replay applies that update first (sdk-core sorts updates before
 * results), so a timer started there is out of order: the third kind of
 * nondeterminism.
 * So the first thing after a fire is a local activity (the power check when it
 * is one, else an empty fence): scheduling one records no event, and sdk-core
 * answers the query before the result can arrive and then keeps the result for
 * the next real task, where it is sorted after the update as on replay. The
 * next period's timer is started by the next pass, after the checks.
 *
 * A host's DHCP lease is not read here: one activity watches it
 * (host-dhcp.ts, LeaseWatch), so waiting for a lease costs no fires.
 */
import { CancellationScope, condition, patched, sleep } from '@temporalio/workflow';
import type { HostContext } from './context';

export interface IdleChecks {
  /** ms between power checks; undefined: none. */
  powerMs: number | undefined;
  checkPower(): Promise<void>;
  /** The power check's first step is a local activity (so it can be the fence). */
  powerCheckIsLocal(): boolean;
  /** An empty local activity. */
  fence(): Promise<void>;
}

/** One period of the idle wait. Kept across the loop's passes until it fires or an operation starts. */
interface IdleTimer {
  fired: boolean;
  settled: Promise<void>;
  cancel(): void;
}

function startIdleTimer(ms: number): IdleTimer {
  const scope = new CancellationScope();
  const t: IdleTimer = { fired: false, settled: Promise.resolve(), cancel: () => scope.cancel() };
  t.settled = scope.run(() => sleep(ms)).then(
    () => {
      t.fired = true;
    },
    () => undefined,
  );
  return t;
}

/** The idle wait's state in one run: the pending timer. */
export class IdleWait {
  private timer: IdleTimer | undefined;

  constructor(private readonly ctx: HostContext) {}

  /**
   * An operation starts. Before patch lifecycle-events its timer went (two events per idle period: started,
   * cancelled); now it is kept and the next idle period goes on with it: a check at most one period after
   * the last, never more often. A fire during the operation costs a task (once a period at most) and
   * the check runs when the host is idle again. Called where the loop decides, after whatever arrived
   * in that task was applied.
   */
  leave(): void {
    // patch since v0.2.0
    if (patched('lifecycle-events')) return;
    this.stop();
  }

  /** The timer goes: no check is due while the host is not checked at all. */
  private stop(): void {
    this.timer?.cancel();
    this.timer = undefined;
  }

  /**
   * Waits until `changed()` or the period ends; on a fire, runs what is due at that fire
   * (a local activity first, the next timer from the next pass). The timer is started only when none is
   * pending or in the pass that saw it fire, never because a pass came back idle: a pass the
   * live worker makes before an update of the same task (a stale activation) starts nothing
   * a replay would not.
   */
  async wait(changed: () => boolean, checks: IdleChecks): Promise<void> {
    const periodMs = checks.powerMs;
    const woken = (): boolean => changed() || this.ctx.historyTooLong();
    if (periodMs === undefined) {
      this.stop();
      await condition(woken);
      return;
    }
    this.timer ??= startIdleTimer(periodMs);
    const timer = this.timer;
    const waitScope = new CancellationScope();
    const woke = waitScope.run(() => condition(woken)).then(
      () => undefined,
      () => undefined,
    );
    await Promise.race([timer.settled, woke]);
    waitScope.cancel();
    await woke;
    // A fire applied in this activation has set `fired` by now (its callback ran before ours).
    if (!timer.fired) return;
    this.timer = undefined;
    if (!checks.powerCheckIsLocal()) await checks.fence();
    await checks.checkPower();
  }
}
