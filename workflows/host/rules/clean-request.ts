/**
 * The host's `requestClean` update: a manual clean is
 * validated and refused before anything is stored or sent to Ironic; an
 * accepted request makes the host run the `clean` operation from
 * `preparing`, and is retried on failure until it succeeds or is withdrawn.
 */
import { ApplicationFailure, setHandler } from '@temporalio/workflow';
import { formatFieldErrors } from '../../../model/field-error';
import type { Provisioner } from '../provisioners/provisioner';
import { ERASING_STEPS, stepNames, validateCleanRequest, type CleanRequest } from '../../../model/clean';
import { requestCleanUpdate, type CleanRequestResult, type HostState, type OperationKind } from '../../../contracts/host';
import { policyEntryFor, servicingAllows } from '../../../model/host-update-policy';
import { now, type HostContext } from '../context';

const refuse = (message: string): never => {
  throw ApplicationFailure.create({ type: 'Conflict', message });
};

/** Why this host cannot take `request` now (throws), or nothing when it can. */
export function checkCleanRequest(s: HostState, request: CleanRequest | null, running: OperationKind | undefined, provisioner: Provisioner): void {
  if (request === null) return;
  const valid = validateCleanRequest(request);
  if (!valid.ok) throw ApplicationFailure.create({ type: 'InvalidRequest', message: formatFieldErrors(valid.errors), details: [valid.errors] });
  if (!s.spec) throw ApplicationFailure.create({ type: 'NotFound', message: 'the host has no spec yet' });
  if (s.deleteRequested) refuse('the host is being deleted');
  const unsupported = provisioner.refuseCleanSteps(valid.value.steps.map((step) => step.name));
  if (unsupported) refuse(unsupported);
  if (s.detached || s.directives?.detached) refuse('the host is detached from Ironic');
  if (running === 'clean') refuse(`a clean is running; withdraw it first (DELETE …/clean), then send the corrected request`);
  const state = s.status.provisioning.state;
  if (state === 'provisioned' && s.updatePolicy) return checkServiceRequest(s, valid.value, running, provisioner);
  const erasing = valid.value.steps.filter((step) => ERASING_STEPS.includes(step.name)).map((step) => step.name);
  // A request waiting to retry in `preparing` (a failed clean) may be replaced by a corrected one.
  const retrying = state === 'preparing' && s.cleanRequest !== undefined;
  if (state !== 'available' && !retrying) {
    const what = erasing.length > 0 ? `${erasing.join(', ')} erase${erasing.length === 1 ? 's' : ''} the host's disks` : 'cleaning reboots the host';
    const hint =
      state === 'provisioned' || state === 'externally provisioned'
        ? `; deprovision it first (remove the image)${state === 'provisioned' ? ', or give it a HostUpdatePolicy that allows servicing its bios (firmwareSettings: onReboot) or firmware (firmwareUpdates: onReboot) steps' : ''}`
        : '';
    refuse(`${what}: a clean runs only on an available host, and the host is ${state || 'not registered'}${hint}`);
  }
  if (state === 'available' && s.spec.image) refuse('the host has an image and is about to provision; remove the image first');
}

/** A provisioned host with a HostUpdatePolicy: serviced, each step as its policy allows; erasing and RAID never (they destroy data). */
function checkServiceRequest(s: HostState, request: CleanRequest, running: OperationKind | undefined, provisioner: Provisioner): void {
  if (provisioner.servicingRefused) refuse(provisioner.servicingRefused);
  if (running === 'service') refuse('a service is running; withdraw it first (DELETE …/clean), then send the corrected request');
  const refused = request.steps.filter((step) => !servicingAllows(s.updatePolicy, step.name));
  if (refused.length === 0) return;
  const why = refused.map((step) => {
    if (ERASING_STEPS.includes(step.name)) return `${step.name} ${step.name === 'raid' ? 'rebuilds the RAID layout (destroys data)' : "erases the host's disks"}: never on a provisioned host; deprovision it first (remove the image)`;
    return `${step.name} needs the host's HostUpdatePolicy to have ${policyEntryFor(step.name)}: onReboot (it has ${s.updatePolicy?.[policyEntryFor(step.name)!] ?? 'none'})`;
  });
  refuse(`the host is provisioned and is serviced only as its HostUpdatePolicy allows: ${why.join('; ')}`);
}

/** The request's handler and validator, registered here and also run by the fleet's `fleetChange` (handlers.ts). */
export interface CleanHandler {
  apply(request: CleanRequest | null): CleanRequestResult;
  check(request: CleanRequest | null): void;
}

export function setCleanHandler(ctx: HostContext): CleanHandler {
  const { s } = ctx;
  let ids = 0;
  const apply = (request: CleanRequest | null): CleanRequestResult => {
    if (request === null) {
      if (!s.cleanRequest) return { changed: false };
      delete s.cleanRequest;
      s.retryAt = undefined;
      ctx.nudge([{ type: 'Normal', reason: 'CleanWithdrawn', message: 'the clean request was withdrawn' }]);
      return { changed: true };
    }
    ids = Math.max(ids, s.cleanRequest?.id ?? 0) + 1;
    // Stored as the validator accepted it: a handler never re-validates (it runs again on replay).
    s.cleanRequest = { request, id: ids, at: now() };
    s.retryAt = undefined;
    ctx.nudge([{ type: 'Normal', reason: 'CleanRequested', message: `clean requested: ${stepNames(request).join(', ')}` }]);
    return { pending: s.cleanRequest, changed: true };
  };
  const check = (request: CleanRequest | null): void => checkCleanRequest(s, request, ctx.running?.kind, ctx.provisioner());
  setHandler(requestCleanUpdate, apply, { validator: check });
  return { apply, check };
}
