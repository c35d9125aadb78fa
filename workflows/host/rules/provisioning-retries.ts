/**
 * BMO's provisioning retry limit (`--max-provisioning-retries`). A failed deploy is not retried in place: the
 * host deprovisions (Ironic cleans up the failed deploy), counting the
 * failure in `status.provisioningFailCount`, goes back to `available` and
 * provisions again, until the count reaches the limit for the same image
 * (`status.lastAttemptedImage`, the image of the last attempt). There it
 * stops with BMO's provisioning error; a changed image starts counting anew.
 * As BMO's handleProvisioning, actionManageAvailable and handleAvailable.
 */
import type { HostState } from '../../../contracts/host';
import type { HostSpec, Image } from '../../../model/host';
import { retryLimitMessage } from '../../../model/provisioning-retries';

/** BMO's default `--max-provisioning-retries`; 0 means no limit. */
export const DEFAULT_MAX_PROVISIONING_RETRIES = 5;

const IMAGE_KEYS = ['url', 'checksum', 'checksumType', 'format', 'ociAuthSecretName'] as const;

/** BMO compares the whole image spec (reflect.DeepEqual): any field changed is a new image. */
function sameImage(a: Partial<Image> | undefined, b: Record<string, unknown> | undefined): boolean {
  if (a === undefined || b === undefined) return a === undefined && b === undefined;
  return IMAGE_KEYS.every((k) => (a[k] ?? '') === (b[k] ?? ''));
}

/** The failures that count against the spec's image (none once the image changed, or when there is none). */
export function provisioningFailures(s: HostState): number {
  const spec: HostSpec | undefined = s.spec;
  if (!spec?.image) return 0;
  return sameImage(spec.image, s.status.lastAttemptedImage) ? (s.status.provisioningFailCount ?? 0) : 0;
}

/** A deploy failed and its host waits to try again (BMO: ErrorType set in `provisioning`). */
export function deployFailed(s: HostState): boolean {
  const st = s.status;
  return st.provisioning.state === 'provisioning' && st.operationalStatus === 'error' && st.errorType === 'provisioning error';
}

/** Whether the retry limit can change this decision: a failed deploy, or a host about to provision (the attempt is recorded). */
export function provisioningRetriesApply(s: HostState): boolean {
  if (s.deleteRequested || !s.spec?.bmc) return false;
  if (deployFailed(s)) return true;
  return s.status.provisioning.state === 'available' && s.spec.image !== undefined;
}

/** BMO's message at the limit, or undefined while under it. */
export function retryLimitReached(s: HostState): string | undefined {
  const limit = s.options.maxProvisioningRetries ?? DEFAULT_MAX_PROVISIONING_RETRIES;
  const count = provisioningFailures(s);
  if (limit <= 0 || count < limit) return undefined;
  return retryLimitMessage(count, limit);
}

/** Before a provisioning from `available`: a changed image resets the count, and the attempt's image is recorded. */
export function recordAttempt(s: HostState): void {
  s.status.provisioningFailCount = provisioningFailures(s);
  if (s.spec?.image) s.status.lastAttemptedImage = { ...s.spec.image };
  else delete s.status.lastAttemptedImage;
}
