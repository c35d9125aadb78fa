/**
 * What the host workflow does with the Kubernetes shim's inputs beyond the
 * spec: annotations (detached, inspect, hardware details), a status to
 * restore, and the credentials Secret's version. Pure functions on the host
 * state, so the workflow stays a thin caller and the rules can be tested alone.
 */
import { ApplicationFailure } from '@temporalio/workflow';
import { HostStatusSchema, type CredentialsStatus, type HostStatus } from '../../model/host';
import { formatFieldErrors } from '../../model/field-error';
import { schemaErrors } from '../../model/validate';
import type { HostEvent } from '../../model/host-event';
import type { DirectivesResult, HostDirectives, HostState } from '../../contracts/host';
import { detachPending, inspectionMode } from './decide';

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/** Takes the shim's directives as a whole; returns what changed and the Events worth recording. */
export function applyDirectives(s: HostState, d: HostDirectives): { result: DirectivesResult; events: HostEvent[] } {
  const next = JSON.parse(JSON.stringify(d)) as HostDirectives;
  const changed = !same(s.directives ?? {}, next);
  const events: HostEvent[] = [];
  if (changed) s.directives = next;
  // External inspection data: it replaces status.hardware (and so the HardwareData) when given;
  // removing the annotation later keeps what it set.
  if (next.hardwareDetails && !same(s.status.hardware, next.hardwareDetails)) {
    s.status.hardware = next.hardwareDetails;
    events.push({ type: 'Normal', reason: 'UpdateHardwareDetails', message: 'status.hardware set from the inspect.metal3.io/hardwaredetails annotation' });
  }
  const pending = detachPending(s);
  if (changed && pending) events.push({ type: 'Normal', reason: 'DetachPending', message: `detach requested: ${pending}` });
  return { result: { changed, ...(pending ? { detachPending: pending } : {}) }, events };
}

/** Rejects (nothing applied) a status that does not fit the schema. */
export function checkRestoredStatus(status: HostStatus): void {
  const errors = schemaErrors(HostStatusSchema, status, 'status');
  if (errors.length > 0) {
    throw ApplicationFailure.create({ type: 'InvalidStatus', message: formatFieldErrors(errors), details: [errors] });
  }
}

/**
 * Metal3's status annotation: a host that has no status yet takes the given
 * one instead of registering and inspecting from scratch. Ironic may not know
 * the node (a new cluster), so the host registers first and a provisioned host
 * is adopted, never redeployed.
 */
export function restoreStatus(s: HostState, status: HostStatus, now: string): { restored: boolean; reason?: string; events: HostEvent[] } {
  const current = s.status.provisioning;
  if (current.state !== '' || current.ID !== '' || s.opSeq > 0) {
    return { restored: false, reason: `the host already has a status (provisioning state ${current.state || 'unmanaged'})`, events: [] };
  }
  const restored = JSON.parse(JSON.stringify(status)) as HostStatus;
  // Metal3 writes `{"url": ""}` on a host that runs no image (a status the validator refused before it accepted one).
  if (restored.provisioning.image?.url === '') delete restored.provisioning.image;
  restored.lastUpdated ??= now;
  s.status = restored;
  s.registered = undefined;
  const state = restored.provisioning.state;
  s.needsAttach = state !== '' && state !== 'unmanaged' && state !== 'registering';
  return {
    restored: true,
    events: [{ type: 'Normal', reason: 'StatusRestored', message: `status restored from the baremetalhost.metal3.io/status annotation; provisioning state ${state || 'unmanaged'}` }],
  };
}

/** Why the host refuses an inspection request (throws), or nothing when it takes one. */
export function checkInspectionRequest(s: HostState): void {
  if (s.deleteRequested) throw ApplicationFailure.create({ type: 'Conflict', message: 'the host is being deleted' });
  if (inspectionMode(s) === 'disabled') {
    throw ApplicationFailure.create({
      type: 'InvalidRequest',
      message: 'inspection is disabled for this host (inspect.metal3.io: disabled or spec.inspectionMode: disabled)',
    });
  }
}

/** `inspect.metal3.io` (empty): re-inspect once available. Throws when inspection is disabled. */
export function requestInspection(s: HostState): { accepted: boolean; pending: boolean; events: HostEvent[] } {
  checkInspectionRequest(s);
  const state = s.status.provisioning.state;
  // A host that has not been inspected yet will be anyway.
  if (state === '' || state === 'unmanaged' || state === 'registering' || state === 'inspecting') {
    return { accepted: true, pending: false, events: [] };
  }
  if (s.inspectionRequested) return { accepted: true, pending: true, events: [] };
  s.inspectionRequested = true;
  const when = state === 'available' ? 'now' : `once the host is available (it is ${state})`;
  return { accepted: true, pending: true, events: [{ type: 'Normal', reason: 'InspectionRequested', message: `inspection requested by inspect.metal3.io; it runs ${when}` }] };
}

/** Metal3's triedCredentials for a registration starting now: the Secret's name and version, never its data. */
export function credentialsAttempt(s: HostState): CredentialsStatus | undefined {
  const seen = s.directives?.credentials;
  if (!seen || !s.spec?.bmc || seen.name !== s.spec.bmc.credentialsName) return undefined;
  return { credentials: { name: seen.name, namespace: seen.namespace }, credentialsVersion: seen.version };
}
