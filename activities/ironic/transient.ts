/**
 * Ironic's own saturation written into a node's last_error: a verb that failed
 * because Ironic (not the host or its BMC) was briefly unable to do the work.
 * Under load Ironic's SQLite stays locked longer than its
 * `[database] sqlite_max_wait_for_retry` (10 s), and the conductor's step
 * then fails with `TemporaryFailure` ("Resource temporarily unavailable,
 * please retry"), or it has no free worker thread (`NoFreeConductorWorker`).
 * Sending the verb again is what Ironic asks for; any other last_error is the
 * host's and is reported at once.
 */
const TRANSIENT = /TemporaryFailure|temporarily unavailable|database is locked|NoFreeConductorWorker|no free conductor worker/i;

export const transientIronicError = (lastError: string | null | undefined): boolean => !!lastError && TRANSIENT.test(lastError);

/** What Ironic writes when it rolls a verb back for want of a free conductor worker ("No free conductor workers available"). */
export const noFreeWorker = (lastError: string | null | undefined): boolean => !!lastError && /no free conductor workers? available/i.test(lastError);

/**
 * How many times a verb is sent again after a transient failure, across the
 * activity's attempts (the verbs sent travel in its heartbeat details), before
 * the failure is reported as the host's error after all.
 */
export const TRANSIENT_RESENDS = 5;

/** Pause before sending a verb again: 2 s, 4 s, 8 s… (Ironic is busy; hammering it does not help). */
export const resendDelayMs = (resend: number): number => Math.min(2000 * 2 ** (resend - 1), 30_000);

/**
 * Whether an inspection Ironic failed is sent again quietly (within TRANSIENT_RESENDS, counted by `sent`, the
 * inspections sent so far): its last_error is Ironic's saturation, or it has none and the inspection that failed
 * is one of ours that got no answer in time. Under load Ironic took that request while too busy to answer it and
 * then failed it without a reason; nothing says the host is at fault. Any other failure is the host's.
 */
export function inspectionFailedForIronic(lastError: string | null | undefined, sent: number, unanswered: boolean): boolean {
  if (sent > TRANSIENT_RESENDS) return false;
  return transientIronicError(lastError) || (!lastError && unanswered);
}
