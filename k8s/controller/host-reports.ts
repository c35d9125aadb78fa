/**
 * What the reconciler says on a BareMetalHost about its spec and annotations
 * without changing anything else: an invalid spec or annotation (status and a
 * Warning Event), annotation values read as Metal3's default, and Metal3
 * fields accepted with nothing behind them. Each is said once per distinct
 * message, so a requeue does not repeat it.
 */
import type { KubeRest } from '../../clients/kubernetes/kube-rest';
import { MERGE } from '../../clients/kubernetes/metal3-objects';
import { recordHostEvent } from '../../clients/kubernetes/events';
import { formatFieldErrors, type FieldError } from '../../model/field-error';
import { fitStrings } from '../../model/fit-schema';
import { HostStatusSchema, type HostRef, type HostSpec } from '../../model/host';
import { invalidStatus } from './invalid-status';
import type { BareMetalHost } from './bare-metal-host';

/** Metal3 fields metalflow accepts without acting on them, and why. */
const IGNORED_FIELDS = {
  taints: 'deprecated in Metal3, which never implemented it either',
  networkInterfaces: 'switch-port configuration is not implemented in metalflow',
} as const;

export interface ReportDeps {
  rest: KubeRest;
  log?: (message: string) => void;
}

/**
 * Metal3 fields accepted so that its manifests apply, with nothing behind them here: said once per
 * spec handed over (again after a controller restart), so the user knows they do nothing.
 */
export async function warnIgnored(rest: KubeRest, obj: BareMetalHost, ref: HostRef, spec: HostSpec): Promise<void> {
  const ignored = Object.entries(IGNORED_FIELDS).filter(([key]) => (spec[key as keyof typeof IGNORED_FIELDS]?.length ?? 0) > 0);
  if (ignored.length === 0) return;
  const message = ignored.map(([key, why]) => `spec.${key} is accepted but ignored: ${why}`).join('; ');
  await recordHostEvent(rest, { ...ref, uid: obj.metadata.uid }, { type: 'Warning', reason: 'FieldIgnored', message }, 'metalflow-controller');
}

/**
 * Values Metal3 reads as its default (a reboot that does not parse is soft, detached arguments
 * that do not decode are "delete"): read the same way here, and said once per distinct set in a
 * Warning Event with BMO's reason, so a typo in a hard reboot does not pass unnoticed.
 * `warned`: the message last said per host (the reconciler's; said again after a restart).
 */
export async function warnAnnotationValues(deps: ReportDeps, warned: Map<string, string>, obj: BareMetalHost, key: string, ref: HostRef, warnings: FieldError[]): Promise<void> {
  const message = warnings.length > 0 ? fitStrings(HostStatusSchema.properties.errorMessage, formatFieldErrors(warnings)) : '';
  if ((warned.get(key) ?? '') === message) return;
  if (message) {
    deps.log?.(`${ref.namespace}/${ref.name}: ${message}`);
    await recordHostEvent(deps.rest, { ...ref, uid: obj.metadata.uid }, { type: 'Warning', reason: 'InvalidAnnotationValue', message }, 'metalflow-controller');
  }
  warned.set(key, message);
}

/** Puts the problem on the object (status and an Event) once; nothing else about the host changes. */
export async function reportInvalid(deps: ReportDeps, objectPath: string, obj: BareMetalHost, ref: HostRef, reason: string, errors: FieldError[]): Promise<void> {
  // Cut to the CRD's limit: reasons may quote what was given.
  const message = fitStrings(HostStatusSchema.properties.errorMessage, formatFieldErrors(errors));
  if (obj.status?.operationalStatus === 'error' && obj.status.errorMessage === message) return;
  deps.log?.(`${ref.namespace}/${ref.name}: ${message}`);
  // With the resourceVersion read: a worker's status written since is not overwritten (409; the queue retries on the new object).
  await deps.rest.call('PATCH', `${objectPath}/status`, {
    body: { metadata: { resourceVersion: obj.metadata.resourceVersion }, status: invalidStatus(obj, errors, message) },
    contentType: MERGE,
  });
  await recordHostEvent(deps.rest, { ...ref, uid: obj.metadata.uid }, { type: 'Warning', reason, message }, 'metalflow-controller');
}
