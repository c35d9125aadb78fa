/**
 * The idle power check's clock (patch power-ticker): one timer started with
 * the run and, each time it fires, the next one at once, whatever the host
 * is doing. Before it, the idle wait started its own timer on every pass
 * through the idle branch and a wake cancelled it. Under load the worker can
 * take an update in a later activation of the same workflow task than a
 * replay does (after a local activity resolved instead of before it); a pass
 * that only the live run made then started and cancelled a timer that never
 * reached the history, the run's timer numbers moved on by one, and the next
 * replay failed ("Timer fired event did not have expected timer id 3, it was
 * 4", five hosts of the 1,000-host fleet run; bench/findings). A timer now
 * starts only with the run or in the activation of the fire before it, both
 * in the history, so a live run and its replay number their timers alike
 * however many passes either makes.
 */
import { CancellationScope, isCancellation, sleep } from '@temporalio/workflow';

export interface PowerTicker {
  /** Ticks so far: a wait that sees one come ends. */
  readonly ticks: number;
  /**
   * When the pending tick is due (its timer's start plus the period). A check is
   * decided by this clock, not by which promise settled first: a replay may hand
   * the tick and an update over in one activation where the live run had two.
   */
  readonly dueAt: number;
}

export function startPowerTicker(periodMs: number): PowerTicker {
  const ticker = { ticks: 0, dueAt: 0 };
  const next = (): void => {
    ticker.dueAt = Date.now() + periodMs;
    // Detached from whatever scope is current: an operation's cancellation must not stop the clock.
    CancellationScope.nonCancellable(() => sleep(periodMs)).then(
      () => {
        ticker.ticks += 1;
        next();
      },
      (err: unknown) => {
        if (!isCancellation(err)) throw err;
      },
    );
  };
  next();
  return ticker;
}
