/**
 * BMO's provisioning retry limit, as the status says it: the message a host
 * held at the limit shows, and how a reader of that status (the Kubernetes
 * controller) tells that `status.provisioningFailCount` was lowered by hand.
 */

/** BMO's message at the limit (BMO `actionManageAvailable`), word for word. */
export const retryLimitMessage = (count: number, limit: number): string =>
  `provisioning failed ${count} times, retry limit (${limit}) reached; change image or reset provisioningFailCount to retry`;

const HELD = /^provisioning failed (\d+) times, retry limit \((\d+)\) reached;/;

interface RetryStatus {
  provisioning?: { state?: string };
  operationalStatus?: string;
  errorType?: string;
  errorMessage?: string;
  provisioningFailCount?: number;
}

/**
 * The count a status asks for when it shows a host held at the retry limit whose
 * `provisioningFailCount` is lower than the count its message names: someone reset it
 * (the host itself always writes the two together). Undefined otherwise.
 */
export function loweredFailCount(status: RetryStatus | undefined): number | undefined {
  if (!status || status.provisioning?.state !== 'available' || status.operationalStatus !== 'error' || status.errorType !== 'provisioning error') return undefined;
  const held = HELD.exec(status.errorMessage ?? '');
  const count = status.provisioningFailCount ?? 0;
  return held && Number.isInteger(count) && count >= 0 && count < Number(held[1]) ? count : undefined;
}
