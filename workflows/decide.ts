/**
 * The host state machine: given what is desired and what is, decide the next
 * step. Pure, like BMO's host state machine; the host workflow carries it out.
 */
import type { ErrorType, HostSpec, ProvisioningState } from '../types/host';
import type { HostState, OperationKind } from './definitions';
import { powerGoal, type RebootMode } from './power-requests';

/** Power target of a `power` or `reboot` operation decided in a steady state. */
export interface PowerStep {
  on: boolean;
  /** Soft (shut down, hard if that fails) or hard; absent: hard, as before requests existed. */
  mode?: RebootMode;
}

export type Decision =
  | { kind: 'operation'; op: OperationKind; state: ProvisioningState; power?: PowerStep }
  | { kind: 'wait' }
  | { kind: 'finish' };

/** Where the host goes when an operation run in `state` succeeds. */
export function nextStateAfter(op: OperationKind, state: ProvisioningState, s: HostState): ProvisioningState {
  switch (op) {
    case 'enroll':
      // Re-registration in a steady state (changed BMC settings) keeps the state.
      if (state !== 'registering') return state;
      return s.spec?.externallyProvisioned ? 'externally provisioned' : 'inspecting';
    case 'inspect':
      return 'preparing';
    case 'prepare':
      return 'available';
    case 'provision':
      return 'provisioned';
    case 'deprovision':
      return s.deleteRequested ? 'powering off before delete' : 'available';
    case 'power':
      return state === 'powering off before delete' ? 'deleting' : state;
    case 'reboot':
      return state;
    case 'delete':
      return 'deleting';
  }
}

export const ERROR_TYPE_OF: Record<OperationKind, ErrorType> = {
  enroll: 'registration error',
  inspect: 'inspection error',
  prepare: 'preparation error',
  provision: 'provisioning error',
  deprovision: 'provisioning error',
  power: 'power management error',
  reboot: 'power management error',
  delete: 'registration error',
};

/** What of the spec Ironic's node record depends on; a change means registering again. */
export function registrationFingerprint(spec: HostSpec): string {
  return JSON.stringify([
    spec.bmc.address,
    spec.bmc.credentialsName,
    spec.bmc.disableCertificateVerification ?? false,
    spec.bootMACAddress ?? '',
    spec.bootMode ?? 'UEFI',
    spec.automatedCleaningMode ?? 'metadata',
    spec.rootDeviceHints ?? {},
  ]);
}

const PROVISIONED_STATES: ProvisioningState[] = ['provisioning', 'provisioned', 'deprovisioning'];

export function decide(s: HostState): Decision {
  const state = s.status.provisioning.state;
  const spec = s.spec;

  if (s.deleteRequested) {
    if (state === 'deleting') return { kind: 'operation', op: 'delete', state };
    // A direct host that never enrolled: its enrollment only read the BMC, so there is nothing to undo.
    if (spec?.provisioner === 'direct' && s.registered === undefined) return { kind: 'finish' };
    if (PROVISIONED_STATES.includes(state) && !spec?.externallyProvisioned) {
      return { kind: 'operation', op: 'deprovision', state: 'deprovisioning' };
    }
    if (state !== '' || s.status.provisioning.ID !== '') {
      return { kind: 'operation', op: 'power', state: 'powering off before delete' };
    }
    // Never registered: nothing exists outside this workflow.
    return { kind: 'finish' };
  }

  if (!spec) return { kind: 'wait' };
  const needsRegistration = s.registered !== registrationFingerprint(spec);
  /** Steady states: power follows spec.online, reboot and power-off requests (power-requests.ts). */
  const power = (): Decision => {
    const goal = powerGoal(s.status.poweredOn, spec, s.power);
    if (goal.action === 'reboot') return { kind: 'operation', op: 'reboot', state, power: { on: spec.online, mode: goal.mode } };
    if (goal.action === 'power') {
      return { kind: 'operation', op: 'power', state, power: goal.mode ? { on: goal.on, mode: goal.mode } : { on: goal.on } };
    }
    return { kind: 'wait' };
  };

  switch (state) {
    case '':
    case 'unmanaged':
    case 'registering':
      return { kind: 'operation', op: 'enroll', state: 'registering' };
    case 'inspecting':
      return { kind: 'operation', op: 'inspect', state };
    case 'preparing':
      return { kind: 'operation', op: 'prepare', state };
    case 'provisioning':
      // The image was removed while a failed provisioning waited to retry: undo it instead.
      if (!spec.image) return { kind: 'operation', op: 'deprovision', state: 'deprovisioning' };
      return { kind: 'operation', op: 'provision', state };
    case 'deprovisioning':
      return { kind: 'operation', op: 'deprovision', state };
    case 'available':
      if (needsRegistration) return { kind: 'operation', op: 'enroll', state };
      if (spec.image) return { kind: 'operation', op: 'provision', state: 'provisioning' };
      return power();
    case 'provisioned':
      if (needsRegistration) return { kind: 'operation', op: 'enroll', state };
      // As in Metal3: removing the image deprovisions; changing it needs a removal first.
      if (!spec.image) return { kind: 'operation', op: 'deprovision', state: 'deprovisioning' };
      return power();
    case 'externally provisioned':
      if (needsRegistration) return { kind: 'operation', op: 'enroll', state };
      return power();
    case 'powering off before delete':
    case 'deleting':
      // Only reachable with a delete request, handled above.
      return { kind: 'wait' };
  }
}

/**
 * Why a new spec cannot be accepted now, or undefined when it can. A change
 * that the running operation depends on would leave Ironic and the host's
 * record disagreeing, so it waits for the operation to end (HTTP 409).
 */
export function specConflict(s: HostState, next: HostSpec, running: OperationKind | undefined): string | undefined {
  if (s.deleteRequested) return 'the host is being deleted';
  const prev = s.spec;
  const provisioner = (spec: HostSpec | undefined) => spec?.provisioner ?? 'ironic';
  // Ironic's node and the BMC's own state belong to one provisioner each; switching would orphan one.
  if (prev && s.status.provisioning.state !== '' && provisioner(prev) !== provisioner(next)) {
    return `spec.provisioner cannot change from ${provisioner(prev)} to ${provisioner(next)} once the host is registered; delete the host and create it again`;
  }
  if (!prev || !running) return undefined;
  if (prev.bootMACAddress && next.bootMACAddress !== prev.bootMACAddress) {
    return `spec.bootMACAddress cannot change while the host is ${s.status.provisioning.state}`;
  }
  if (running === 'enroll' && registrationFingerprint(prev) !== registrationFingerprint(next)) {
    return 'BMC settings cannot change while the host is registering; retry when it is done';
  }
  if (running === 'provision' && next.image && JSON.stringify(next.image) !== JSON.stringify(prev.image)) {
    return `the host is provisioning ${prev.image?.url ?? 'an image'}; remove the image or wait until it is provisioned`;
  }
  return undefined;
}
