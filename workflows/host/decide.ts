/**
 * The host state machine: given what is desired and what is, decide the next
 * step. Pure, like BMO's host state machine; the host workflow carries it out.
 */
import { PROVISIONING_STATES, type ErrorType, type HostSpec, type Image, type InspectionMode, type ProvisioningState } from '../../model/host';
import type { HostState, OperationKind } from '../../contracts/host';
import { customDeployMethod } from '../../model/custom-deploy';
import { offlinePowerStep, powerGoal, settlePowerRequests, type PowerRequests, type RebootMode } from './rules/power-requests';
import { deployFailed, provisioningRetriesApply, retryLimitReached } from './rules/provisioning-retries';
import { customDeployChanged } from './rules/custom-deploy-change';
import { disablePowerOffStale } from './rules/disable-power-off';
import { pendingSettingsSteps } from '../../model/host-settings';
import { serviceDue, settingsHeld } from './rules/servicing';
import { provisionerFor } from './provisioners/provisioner';
import { provisionerTraits } from './provisioners/traits';
import { DELETE_RETRY_LIMIT } from '../../contracts/host';

export { DELETE_RETRY_LIMIT };

/** spec.raid / spec.firmware differ from what was applied. */
export const settingsPending = (s: HostState): boolean => pendingSettingsSteps(s.spec, s.status).length > 0;

/** Power target of a `power` or `reboot` operation decided in a steady state. */
export interface PowerStep {
  on: boolean;
  /** Soft (shut down, hard if that fails) or hard; absent: hard, as before requests existed. */
  mode?: RebootMode;
}

export type Decision =
  /** `adopt`: the enroll must adopt the node (Ironic `adopt`: active without a deploy). */
  | {
      kind: 'operation';
      op: OperationKind;
      state: ProvisioningState;
      power?: PowerStep;
      adopt?: true;
      /** A delete stopped trying to clean up the host (deleteGiveUp): said in a Warning Event. */
      gaveUp?: DeleteGiveUp;
      /** Recorded as the host's image before the step (an externally provisioned host adopted with it). */
      recordImage?: Image;
      /** Deprovisioning after a failed deploy: counted in status.provisioningFailCount (provisioning-retries.ts). */
      failedDeploy?: true;
      /** A provisioning from available under the retry limit: its image recorded as the attempt's (provisioning-retries.ts). */
      recordAttempt?: true;
      /** Waits for a provisioning permit first (permit.ts). */
      permit?: true;
    }
  /** Paused: nothing touches the hardware, deletion included (as in Metal3), until unpaused. */
  | { kind: 'pause' }
  /** A one-shot reboot of a host held off is served by its being off: recorded, then decided again. */
  | { kind: 'settle'; power: PowerRequests | undefined }
  /** Why changed settings wait is new (or gone): recorded and told once as an Event, then decided again. */
  | { kind: 'tell'; held: string | undefined }
  /** Record an error without running anything (BMO's recordActionFailure): the provisioning retry limit. */
  | { kind: 'fail'; errorType: ErrorType; message: string }
  /** Enter a state that needs no operation (a host without a BMC is `unmanaged`). */
  | { kind: 'enter'; state: ProvisioningState }
  | { kind: 'wait' }
  | { kind: 'finish' };

/**
 * How this host is inspected: `inspect.metal3.io: disabled` wins, then
 * spec.inspectionMode, `agent` by default. The hook for `fast` (out-of-band)
 * inspection: the inspect operation receives the spec and can branch on it.
 */
export function inspectionMode(s: HostState): InspectionMode {
  if (s.directives?.inspectionDisabled) return 'disabled';
  return s.spec?.inspectionMode ?? 'agent';
}

/** States in which a node Ironic lost is registered again in place: all but those that register anyway and those leaving Ironic. */
const NOT_REREGISTERED: readonly ProvisioningState[] = ['', 'unmanaged', 'registering', 'powering off before delete', 'deleting'];
export const REREGISTER_STATES: readonly ProvisioningState[] = PROVISIONING_STATES.filter((st) => !NOT_REREGISTERED.includes(st));

/** States in which Metal3 detaches a host (others wait for the running work to get there). */
export const DETACHABLE_STATES: readonly ProvisioningState[] = ['provisioned', 'externally provisioned', 'available'];

/** Why a requested detach is not done now, or undefined when it can be (or none is requested). */
export function detachPending(s: HostState): string | undefined {
  const detach = s.directives?.detached;
  if (!detach || s.detached) return undefined;
  const state = s.status.provisioning.state;
  if (DETACHABLE_STATES.includes(state)) return undefined;
  if (detach.force && !NOT_DETACHABLE_EVEN_FORCED.includes(state)) return undefined;
  if (state === 'deleting' || state === 'powering off before delete') return `the host is ${state}`;
  if (state === '' || state === 'unmanaged') return 'the host is not registered yet; it is detached once it is available';
  return `the host is ${state}; it is detached once it is provisioned, externally provisioned or available`;
}

const NOT_DETACHABLE_EVEN_FORCED: readonly ProvisioningState[] = ['', 'unmanaged', 'deleting', 'powering off before delete'];

/** The credentials Secret changed since it last worked (Metal3's goodCredentials no longer match). */
export function credentialsChanged(s: HostState): boolean {
  const seen = s.directives?.credentials;
  if (!seen || !s.spec?.bmc || seen.name !== s.spec.bmc.credentialsName) return false;
  const good = s.status.goodCredentials;
  return good?.credentials?.name !== seen.name || good.credentialsVersion !== seen.version;
}

/** Where the host goes when an operation run in `state` succeeds. */
export function nextStateAfter(op: OperationKind, state: ProvisioningState, s: HostState): ProvisioningState {
  switch (op) {
    case 'enroll':
      // Re-registration in a steady state (changed BMC settings) keeps the state.
      if (state !== 'registering') return state;
      if (s.spec?.externallyProvisioned) return 'externally provisioned';
      return inspectionMode(s) === 'disabled' ? 'preparing' : 'inspecting';
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
    case 'detach':
      return state;
    case 'clean':
      // The node is left manageable: `prepare` makes the host available again.
      return 'preparing';
    case 'service':
      // Ironic's node stays (or is made again) active: the host stays provisioned.
      return state;
    case 'move':
      // Adopted at the new site as it was (site-move.ts).
      return state;
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
  detach: 'detach error',
  clean: 'preparation error',
  service: 'servicing error',
  // Registering at the new site failed (a provisioned host's: 'provisioned registration error', operation.ts).
  move: 'registration error',
};

/** What of the spec Ironic's node record depends on; a change means registering again. */
export function registrationFingerprint(spec: HostSpec): string {
  return JSON.stringify([
    spec.bmc?.address ?? '',
    spec.bmc?.credentialsName ?? '',
    spec.bmc?.disableCertificateVerification ?? false,
    spec.bootMACAddress ?? '',
    spec.bootMode ?? 'UEFI',
    spec.automatedCleaningMode ?? 'metadata',
    spec.rootDeviceHints ?? {},
  ]);
}

const PROVISIONED_STATES: ProvisioningState[] = ['provisioning', 'provisioned', 'deprovisioning'];


export interface DeleteGiveUp {
  op: 'power' | 'delete';
  state: ProvisioningState;
  reason: 'DeprovisioningSkipped' | 'PowerOffSkipped';
  message: string;
}

/**
 * Where a delete goes when cleaning up the host keeps failing, as BMO does: a deprovisioning that
 * failed more than DELETE_RETRY_LIMIT times moves on to the power off (straight to deleting when
 * the host cannot even be registered: a dead BMC, credentials gone), a power off that failed as
 * often moves on to deleting. Without this a host whose BMC is dead stays Terminating for ever.
 */
export function deleteGiveUp(s: HostState): DeleteGiveUp | undefined {
  const st = s.status;
  if (!s.deleteRequested || st.operationalStatus !== 'error' || st.errorCount <= DELETE_RETRY_LIMIT) return undefined;
  const after = `after ${st.errorCount} failures (last: ${st.errorMessage.slice(0, 500)})`;
  const state = st.provisioning.state;
  if (state === 'deprovisioning') {
    if (s.nodeLost || st.errorType === 'registration error') {
      const message = `giving up on deprovisioning and powering off the host before delete ${after}; it may still be running its image: clean it up by hand`;
      return { op: 'delete', state: 'deleting', reason: 'DeprovisioningSkipped', message };
    }
    const message = `giving up on deprovisioning ${after}; the host may still hold its image: clean it up by hand`;
    return { op: 'power', state: 'powering off before delete', reason: 'DeprovisioningSkipped', message };
  }
  if (state === 'powering off before delete') {
    const message = `giving up on powering the host off before delete ${after}; it may still be powered on`;
    return { op: 'delete', state: 'deleting', reason: 'PowerOffSkipped', message };
  }
  return undefined;
}

/** Where registrationFingerprint keeps the root device hints, and how many entries it has. */
const HINTS_AT = 6;
const FINGERPRINT_ENTRIES = 7;

/** The root device hints the node was last registered with, as JSON; undefined when not known. */
function registeredHints(s: HostState): string | undefined {
  if (s.registered === undefined) return undefined;
  try {
    const parts = JSON.parse(s.registered) as unknown;
    return Array.isArray(parts) && parts.length === FINGERPRINT_ENTRIES ? JSON.stringify(parts[HINTS_AT]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Steady-state moves BMO's host state machine makes that metalflow did not
 * before, or undefined:
 * - available with `externallyProvisioned` set → externally provisioned;
 * - externally provisioned with it cleared → provisioned, the node adopted with
 *   the spec's image (BMO copies it to the status); with no image the host is
 *   cleaned back to available (BMO: provisioned, then deprovisioned);
 * - available whose root device hints changed → preparing (registered again first);
 * - provisioned whose image URL differs from the one it runs → deprovisioned,
 *   then provisioned with the new one (BMO's provisioningCancelled; a checksum
 *   or format change alone is not a new image, as in BMO).
 */
export function metal3Transition(s: HostState): Decision | undefined {
  const spec = s.spec;
  if (!spec?.bmc || s.deleteRequested || s.nodeLost || s.detached || s.directives?.detached || s.needsAttach) return undefined;
  switch (s.status.provisioning.state) {
    case 'available': {
      if (spec.externallyProvisioned) return { kind: 'enter', state: 'externally provisioned' };
      const hints = registeredHints(s);
      if (hints !== undefined && hints !== JSON.stringify(spec.rootDeviceHints ?? {})) return { kind: 'operation', op: 'enroll', state: 'preparing' };
      return undefined;
    }
    case 'externally provisioned':
      if (spec.externallyProvisioned) return undefined;
      if (spec.image) return { kind: 'operation', op: 'enroll', state: 'provisioned', adopt: true, recordImage: spec.image };
      return { kind: 'operation', op: 'prepare', state: 'preparing' };
    case 'provisioned': {
      const running = s.status.provisioning.image?.url;
      if (spec.image && running && spec.image.url !== running) return { kind: 'operation', op: 'deprovision', state: 'deprovisioning' };
      return undefined;
    }
    default:
      return undefined;
  }
}

/**
 * An available host with something to deploy whose spec.online is false: BMO's
 * NeedsProvisioning() is false there, so the host waits (powered off) until it
 * is wanted on. Provisioning would clean the disks of a host that was asked to stay off.
 */
export function offlineHoldsProvisioning(s: HostState): boolean {
  const spec = s.spec;
  if (!spec || spec.online || s.status.provisioning.state !== 'available') return false;
  return spec.image !== undefined || customDeployMethod(spec) !== undefined;
}

/** Rules asked in every state; the first that returns a decision wins. */
type Rule = (s: HostState) => Decision | undefined;
/** Rules and handlers for a host with a spec and a BMC. */
type ManagedRule = (s: HostState, spec: HostSpec) => Decision | undefined;
type Handler = (s: HostState, spec: HostSpec) => Decision;

const operation = (op: OperationKind, state: ProvisioningState): Decision => ({ kind: 'operation', op, state });

/** A place in the provisioning queue goes to the next host meanwhile. */
const paused: Rule = (s) => (s.paused ? { kind: 'pause' } : undefined);

/**
 * A move between sites under way (site-move.ts) goes first: until it is done (or undone) the host's node is
 * held at one site and maybe registered at the other. A move undone for a delete leaves the host at its old site.
 */
const siteMoves: Rule = (s) => (s.siteMove && !s.siteMove.undone ? operation('move', s.status.provisioning.state) : undefined);

const rebootServedByOff: Rule = (s) => {
  const settled = settlePowerRequests(s.status.poweredOn, s.spec, s.power);
  return settled !== s.power ? { kind: 'settle', power: settled } : undefined;
};

/** Kubernetes mode shows why settings wait as an Event, told once per reason; the API view as `settingsHeld`. */
const settingsHeldTold: Rule = (s) => {
  const held = settingsHeld(s);
  return held !== s.heldTold ? { kind: 'tell', held } : undefined;
};

/** Before registering a lost node again: a host that cannot be reached is not registered for ever. */
const giveUpCleaningUp: Rule = (s) => {
  const gaveUp = deleteGiveUp(s);
  return gaveUp ? { kind: 'operation', op: gaveUp.op, state: gaveUp.state, gaveUp } : undefined;
};

/** BMO's provisioningCancelled for a changed custom deploy method (custom-deploy-change.ts). */
const customDeployRedeploys: Rule = (s) => (customDeployChanged(s) ? operation('deprovision', 'deprovisioning') : undefined);

/**
 * Ironic lost the node (node-lost.ts): register again where the host stands, before
 * anything else, a delete's deprovisioning included (its cleaning needs the node).
 */
const nodeLostRegisters: Rule = (s) => {
  const state = s.status.provisioning.state;
  if (!s.nodeLost || s.detached || !s.spec?.bmc || !REREGISTER_STATES.includes(state)) return undefined;
  return { kind: 'operation', op: 'enroll', state, ...(state === 'provisioned' ? { adopt: true as const } : {}) };
};

/** The delete's next step; undefined when no delete is asked, or a detached host's delete is delayed. */
const deleteSteps: Rule = (s) => {
  if (!s.deleteRequested) return undefined;
  const state = s.status.provisioning.state;
  const spec = s.spec;
  const detach = s.directives?.detached;
  if (state === 'deleting') return operation('delete', state);
  // Metal3: a detached host (or one with the annotation) is deleted without
  // power off or deprovisioning, unless its deleteAction is `delay`: then the
  // delete waits until the annotation is removed and the host attached again.
  const delayed = detach ? detach.deleteAction === 'delay' : s.detached === true;
  if (delayed) return undefined;
  // A direct host that never enrolled: its enrollment only read the BMC, so there is nothing to undo.
  if (!provisionerTraits(spec).ironicNode && s.registered === undefined) return { kind: 'finish' };
  if (detach || s.detached) return operation('delete', 'deleting');
  if (PROVISIONED_STATES.includes(state) && !spec?.externallyProvisioned) return operation('deprovision', 'deprovisioning');
  // As BMO: a host that never got past registering is not powered off; deleting removes any node it has.
  if (state === 'registering') return operation('delete', 'deleting');
  if ((state !== '' && state !== 'unmanaged') || s.status.provisioning.ID !== '') return operation('power', 'powering off before delete');
  // Never registered: nothing exists outside this workflow.
  return { kind: 'finish' };
};

/** The detached annotation (detachPending) and attaching again after it, or after a restored status. */
const detachOrAttach: ManagedRule = (s) => {
  const state = s.status.provisioning.state;
  const detach = s.directives?.detached;
  if (s.detached && detach) return { kind: 'wait' };
  if (detach && !s.detached && detachPending(s) === undefined) return operation('detach', state);
  if ((s.detached || s.needsAttach) && state !== '' && state !== 'unmanaged' && state !== 'registering') {
    // Attach (again): register; a provisioned host is adopted as it is, never redeployed.
    return state === 'provisioned' ? { kind: 'operation', op: 'enroll', state, adopt: true } : operation('enroll', state);
  }
  return undefined;
};

/**
 * The rules asked before the state's handler, in this order. A host whose spec
 * has no BMC stops after CROSS_STATE_RULES (unmanaged); MANAGED_RULES follow
 * for the others.
 */
export const CROSS_STATE_RULES: readonly Rule[] = [paused, rebootServedByOff, settingsHeldTold, siteMoves, giveUpCleaningUp, metal3Transition, customDeployRedeploys, nodeLostRegisters, deleteSteps];
export const MANAGED_RULES: readonly ManagedRule[] = [detachOrAttach];

/** Ironic's node must be registered (again): BMC settings, credentials or disablePowerOff changed. */
function needsRegistration(s: HostState, spec: HostSpec): boolean {
  return s.registered !== registrationFingerprint(spec) || credentialsChanged(s) || disablePowerOffStale(s);
}

/** Metal3's custom deploy provisions with or without an image. */
const deploys = (spec: HostSpec): boolean => spec.image !== undefined || customDeployMethod(spec) !== undefined;

/** Steady states: power follows spec.online, reboot and power-off requests (power-requests.ts). */
function steadyPower(s: HostState, spec: HostSpec): Decision {
  const state = s.status.provisioning.state;
  const goal = powerGoal(s.status.poweredOn, spec, s.power);
  if (goal.action === 'reboot') return { kind: 'operation', op: 'reboot', state, power: { on: spec.online, mode: goal.mode } };
  if (goal.action === 'power') {
    // As Metal3: spec.online false is a soft power off, hard only after a failure.
    const step = goal.mode ? { on: goal.on, mode: goal.mode } : (offlinePowerStep({ on: goal.on }, s.status.errorCount) ?? { on: goal.on });
    return { kind: 'operation', op: 'power', state, power: step };
  }
  return { kind: 'wait' };
}

const registers: Handler = () => operation('enroll', 'registering');

// As BMO: inspection disabled meanwhile is skipped (a running one is cancelled, interrupt.ts).
const inspecting: Handler = (s) => (inspectionMode(s) === 'disabled' ? { kind: 'enter', state: 'preparing' } : operation('inspect', s.status.provisioning.state));

const preparing: Handler = (s) => {
  // A manual clean asked for, or changed RAID / BIOS settings, are applied here.
  if (s.cleanRequest || settingsPending(s)) return operation('clean', 'preparing');
  return operation('prepare', 'preparing');
};

const provisioning: Handler = (s, spec) => {
  // As BMO: a failed deploy is cleaned up (deprovisioned) and tried again from available.
  if (provisioningRetriesApply(s) && deployFailed(s)) return { kind: 'operation', op: 'deprovision', state: 'deprovisioning', failedDeploy: true };
  // The image was removed while a failed provisioning waited to retry: undo it instead.
  if (!deploys(spec)) return operation('deprovision', 'deprovisioning');
  return operation('provision', 'provisioning');
};

const deprovisioning: Handler = () => operation('deprovision', 'deprovisioning');

const available: Handler = (s, spec) => {
  if (needsRegistration(s, spec)) return operation('enroll', 'available');
  if (s.inspectionRequested && inspectionMode(s) !== 'disabled') return operation('inspect', 'inspecting');
  if (s.cleanRequest) return operation('clean', 'preparing');
  // Changed RAID or BIOS flags are applied before an image goes on, as BMO prepares again.
  if (settingsPending(s)) return operation('clean', 'preparing');
  if (deploys(spec) && !offlineHoldsProvisioning(s)) {
    // A failed deploy deprovisions and is counted, up to BMO's retry limit (provisioning-retries.ts).
    const retries = provisioningRetriesApply(s);
    const limit = retries ? retryLimitReached(s) : undefined;
    if (limit === undefined) return { kind: 'operation', op: 'provision', state: 'provisioning', ...(retries ? { recordAttempt: true as const } : {}) };
    // Recorded once; then nothing until the image changes (BMO does not manage power there either).
    if (s.status.operationalStatus === 'error' && s.status.errorMessage === limit) return { kind: 'wait' };
    return { kind: 'fail', errorType: 'provisioning error', message: limit };
  }
  return steadyPower(s, spec);
};

const provisioned: Handler = (s, spec) => {
  if (needsRegistration(s, spec)) return operation('enroll', 'provisioned');
  // As in Metal3: removing the image deprovisions (changing it too: metal3Transition).
  if (!deploys(spec)) return operation('deprovision', 'deprovisioning');
  // Before the reboot it waits for (as BMO, which services when the host comes back on).
  if (serviceDue(s)) return operation('service', 'provisioned');
  return steadyPower(s, spec);
};

const externallyProvisioned: Handler = (s, spec) => {
  if (needsRegistration(s, spec)) return operation('enroll', 'externally provisioned');
  return steadyPower(s, spec);
};

/**
 * One handler per provisioning state, as BMO's host state machine: what a
 * managed host does next where it stands, once no cross-state rule applied.
 */
export const HANDLERS: Record<ProvisioningState, Handler> = {
  '': registers,
  unmanaged: registers,
  registering: registers,
  inspecting,
  // Metal3's legacy states, only ever in a status restored from Metal3: BMO passes match profile on to
  // preparing and reads ready as available.
  'match profile': () => ({ kind: 'enter', state: 'preparing' }),
  ready: () => ({ kind: 'enter', state: 'available' }),
  preparing,
  available,
  provisioning,
  provisioned,
  'externally provisioned': externallyProvisioned,
  deprovisioning,
  // Only reachable with a delete request, which deleteSteps handles.
  'powering off before delete': () => ({ kind: 'wait' }),
  deleting: () => ({ kind: 'wait' }),
};

/**
 * The host's next step, and the only place it is chosen: the cross-state rules
 * in order, then the handler of the state the host is in. The host workflow
 * carries the decision out.
 */
export function decide(s: HostState): Decision {
  const d = ruleOrHandler(s);
  // At most METALFLOW_PROVISIONING_LIMIT hosts inspect, provision or deprovision at once (permit.ts).
  return d.kind === 'operation' && provisionerFor(s.spec).needsPermit(d.op, s.spec) ? { ...d, permit: true } : d;
}

function ruleOrHandler(s: HostState): Decision {
  for (const rule of CROSS_STATE_RULES) {
    const d = rule(s);
    if (d) return d;
  }
  const spec = s.spec;
  if (!spec) return { kind: 'wait' };
  // As in Metal3: without a BMC there is nothing to manage until one is given.
  if (!spec.bmc) return s.status.provisioning.state === '' ? { kind: 'enter', state: 'unmanaged' } : { kind: 'wait' };
  for (const rule of MANAGED_RULES) {
    const d = rule(s, spec);
    if (d) return d;
  }
  return HANDLERS[s.status.provisioning.state](s, spec);
}

/** States in which Metal3's webhook lets the BMC address change (besides a detached host). */
const ADDRESS_CHANGE_STATES: readonly ProvisioningState[] = ['', 'unmanaged', 'registering'];

/**
 * Metal3's webhook: a BMC address, once set, changes only while the host is registering or
 * detached. In Kubernetes mode the API server refuses it at admission (the CRD's rule, from the
 * object's status); the workflow takes what the API server admitted, so a host that moved on
 * since its status was written is not left retrying a spec it can never take.
 */
function bmcAddressConflict(s: HostState, next: HostSpec): string | undefined {
  const before = s.spec?.bmc?.address;
  if (!before || next.bmc?.address === before || s.options.publishStatus) return undefined;
  const state = s.status.provisioning.state;
  if (ADDRESS_CHANGE_STATES.includes(state) || s.detached) return undefined;
  return `spec.bmc.address cannot change while the host is ${state} (as in Metal3, only while it is registering or detached): detach it first (PUT …/detached), or delete the host and create it again`;
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
  const address = bmcAddressConflict(s, next);
  if (address) return address;
  if (!prev || !running) return undefined;
  if (prev.bootMACAddress && next.bootMACAddress !== prev.bootMACAddress) {
    return `spec.bootMACAddress cannot change while the host is ${s.status.provisioning.state}`;
  }
  if (running === 'enroll' && registrationFingerprint(prev) !== registrationFingerprint(next)) {
    return 'BMC settings cannot change while the host is registering; retry when it is done';
  }
  if (running === 'move' && registrationFingerprint(prev) !== registrationFingerprint(next)) {
    return 'BMC settings cannot change while the host moves between sites (it registers at the new site); retry when the move is done';
  }
  if (running === 'provision' && next.image && JSON.stringify(next.image) !== JSON.stringify(prev.image)) {
    return `the host is provisioning ${prev.image?.url ?? 'an image'}; remove the image or wait until it is provisioned`;
  }
  return undefined;
}
