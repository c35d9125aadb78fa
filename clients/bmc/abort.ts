/**
 * Cancellation for BMC calls: a caller (a Temporal activity being cancelled)
 * hands its AbortSignal to the client, which stops waiting at once, kills an
 * ipmitool run or aborts a Redfish request, and throws the signal's reason
 * (the activity's CancelledFailure) instead of a BMC error.
 */

/** Sleeps `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(abortReason(signal));
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortReason(signal!));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** What an aborted call throws: the reason the caller gave, or a plain AbortError. */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? Object.assign(new Error('the BMC call was cancelled'), { name: 'AbortError' });
}
