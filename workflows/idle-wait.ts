/**
 * The host workflow's idle wait from era `idle-by-fire` on (versions.ts): what
 * the wait does when it ends is decided by its timer having fired, never by
 * the clock or by what else arrived with the fire.
 *
 * Why: the 1,000-host benchmark (bench/findings/stale-activation-trace-*)
 * showed the live worker applying a timer's fire (or an activity's result) in
 * an activation of its own, with the previous task's time and history length,
 * when a query reached the workflow before the task that carries the fire
 * started; an update sent meanwhile came in the next activation. A replay
 * applies the fire with the task's own time and the update in the same
 * activation. Read from the clock, the check was "not due" live (a new timer
 * started) and due on replay (a local activity instead): a nondeterminism error
 * on every later task of that host. Read from the fire, both take the same path.
 *
 * A host with a DHCP reservation reads its lease every lease period and its
 * power every few of them, counted in fires (one timer for both, so neither
 * needs the clock to tell which is due).
 */
import { CancellationScope, condition, sleep } from '@temporalio/workflow';
import type { HostContext } from './host-context';

export interface IdleChecks {
  /** ms between power checks; undefined: none. */
  powerMs: number | undefined;
  /** ms between lease reads; undefined: none. */
  leaseMs: number | undefined;
  checkPower(): Promise<void>;
  readLease(): Promise<void>;
}

/** Fires counted since the run started (the lease reads and power checks are told apart by it). */
export interface IdleTicks {
  fired: number;
}

/** Waits until `changed()` or one period; on a fire, runs what is due at that fire. */
export async function idleWait(ctx: HostContext, changed: () => boolean, checks: IdleChecks, ticks: IdleTicks): Promise<void> {
  const { powerMs, leaseMs } = checks;
  const periodMs = leaseMs !== undefined && powerMs !== undefined ? Math.min(leaseMs, powerMs) : (leaseMs ?? powerMs);
  if (periodMs === undefined) {
    await condition(() => changed() || ctx.historyTooLong());
    return;
  }
  if (!(await firedBeforeChange(periodMs, () => changed() || ctx.historyTooLong()))) return;
  ticks.fired += 1;
  const every = (ms: number): boolean => ticks.fired % Math.max(1, Math.round(ms / periodMs)) === 0;
  if (leaseMs !== undefined && every(leaseMs)) await checks.readLease();
  if (powerMs !== undefined && every(powerMs)) await checks.checkPower();
}

/**
 * Whether the timer fired (true) or `woken` came first and the timer was cancelled.
 * A fire and a change in one activation count as a fire: the settled timer says so,
 * whichever promise the race saw first.
 */
async function firedBeforeChange(ms: number, woken: () => boolean): Promise<boolean> {
  let fired = false;
  await CancellationScope.cancellable(async () => {
    const timer = sleep(ms).then(() => {
      fired = true;
    });
    try {
      await Promise.race([timer, condition(woken)]);
    } finally {
      CancellationScope.current().cancel();
      // Settled either way now: resolved if it fired, rejected by the cancel if not.
      await timer.catch(() => undefined);
    }
  });
  return fired;
}
