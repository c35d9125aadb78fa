/**
 * The status the controller writes for a spec or annotation it refuses: nothing about the host
 * changes, but `kubectl get bmh` shows a STATE and an ERROR, as Metal3 shows a BMC it cannot use.
 */
import { computeConditions, kubeTimestamp } from '../../model/conditions';
import type { FieldError } from '../../model/field-error';
import { emptyStatus, type HostStatus } from '../../model/host';

/**
 * Metal3's error type for what was refused: what it would have held up (a bad image a deploy,
 * bad RAID preparation); anything else, the BMC and the host's identity first, holds up registration.
 */
export function invalidErrorType(errors: FieldError[]): NonNullable<HostStatus['errorType']> {
  const kind = (field: string) =>
    /^spec\.(image|userData|networkData|metaData|customDeploy)\b/.test(field)
      ? 'provisioning error'
      : /^spec\.(raid|firmware|rootDeviceHints)\b/.test(field)
        ? 'preparation error'
        : 'registration error';
  const kinds = errors.map((e) => kind(e.field));
  return (['registration error', 'preparation error', 'provisioning error'] as const).find((k) => kinds.includes(k)) ?? 'registration error';
}

/**
 * A merge patch of the status: a host with a state keeps it (its workflow still runs on the last
 * valid spec); a host never registered is shown `registering` (the CRD requires a whole status).
 */
export function invalidStatus(
  obj: { metadata: { generation?: number }; status?: Partial<HostStatus> },
  errors: FieldError[],
  message: string,
): Record<string, unknown> {
  const registered = Boolean(obj.status?.provisioning?.state);
  const provisioning = registered ? obj.status!.provisioning! : { state: 'registering' as const, ID: '' };
  const conditions = computeConditions({ provisioning, operationalStatus: 'error' }, obj.status?.conditions, {
    now: kubeTimestamp(new Date()),
    generation: obj.metadata.generation,
  });
  return {
    ...(registered ? {} : { ...emptyStatus(), provisioning }),
    operationalStatus: 'error',
    // BMO's recordActionFailure counts every failure it records, a refused spec included.
    errorCount: (obj.status?.errorCount ?? 0) + 1,
    errorType: invalidErrorType(errors),
    errorMessage: message,
    conditions,
  };
}
