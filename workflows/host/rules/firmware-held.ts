/**
 * HostFirmwareSettings / HostFirmwareComponents changes on a provisioned host:
 * BMO's doServiceIfNeeded applies them by Ironic
 * servicing at the host's next reboot, each only as its HostUpdatePolicy
 * allows (`firmwareSettings: onReboot` the BIOS settings, `firmwareUpdates:
 * onReboot` the images); without it they wait and say why. The controller
 * (Kubernetes) or the firmware routes (API) hand the change over as the
 * update `holdFirmwareChange`; the host holds it (`firmwareHeld`) until the
 * `service` operation that runs before the reboot takes it (servicing-rules.ts).
 */
import { ApplicationFailure, setHandler } from '@temporalio/workflow';
import { formatFieldErrors } from '../../../model/field-error';
import { validateCleanRequest, type CleanRequest } from '../../../model/clean';
import { holdFirmwareChangeUpdate, type HostState, type PendingClean } from '../../../contracts/host';
import type { Provisioner } from '../provisioners/provisioner';
import { now, type HostContext } from '../context';

const refuse = (message: string): never => {
  throw ApplicationFailure.create({ type: 'Conflict', message });
};

/** Why this host cannot hold `request` (throws), or nothing when it can. */
export function checkHoldRequest(s: HostState, request: CleanRequest | null, provisioner: Provisioner): void {
  if (request === null) return;
  const valid = validateCleanRequest(request);
  if (!valid.ok) throw ApplicationFailure.create({ type: 'InvalidRequest', message: formatFieldErrors(valid.errors), details: [valid.errors] });
  const errors = valid.value.steps.flatMap((step, i) =>
    step.name === 'firmware' || (step.name === 'bios' && step.firmware === undefined)
      ? []
      : [{ field: `steps[${i}]${step.name === 'bios' ? '.firmware' : '.name'}`, reason: 'not held for servicing; accepted: a bios step with settings (HostFirmwareSettings), a firmware step (HostFirmwareComponents)' }],
  );
  if (errors.length > 0) throw ApplicationFailure.create({ type: 'InvalidRequest', message: formatFieldErrors(errors), details: [errors] });
  if (!s.spec) throw ApplicationFailure.create({ type: 'NotFound', message: 'the host has no spec yet' });
  if (s.deleteRequested) refuse('the host is being deleted');
  if (provisioner.servicingRefused) refuse(provisioner.servicingRefused);
  if (s.detached || s.directives?.detached) refuse('the host is detached from Ironic');
  const state = s.status.provisioning.state;
  if (state !== 'provisioned') {
    refuse(`firmware changes are held for servicing only on a provisioned host, and the host is ${state || 'not registered'} (never applied while provisioning; an available host takes them as a clean)`);
  }
}

export function setHoldFirmwareHandler(ctx: HostContext): void {
  const { s } = ctx;
  let ids = 0;
  setHandler(
    holdFirmwareChangeUpdate,
    (request) => {
      const result = (changed: boolean) => {
        const reason = ctx.view().settingsHeld;
        return { changed, ...(s.firmwareHeld ? { held: s.firmwareHeld } : {}), ...(reason ? { reason } : {}) };
      };
      if (request === null) {
        if (!s.firmwareHeld) return result(false);
        delete s.firmwareHeld;
        ctx.nudge([{ type: 'Normal', reason: 'FirmwareChangeWithdrawn', message: 'the firmware change held for servicing was withdrawn' }]);
        return result(true);
      }
      if (JSON.stringify(s.firmwareHeld?.request) === JSON.stringify(request)) return result(false);
      ids = Math.max(ids, s.firmwareHeld?.id ?? 0) + 1;
      // Stored as the validator accepted it (a handler never re-validates: it runs again on replay).
      const held: PendingClean = { request, id: ids, at: now() };
      s.firmwareHeld = held;
      ctx.nudge([]);
      return result(true);
    },
    { validator: (request) => checkHoldRequest(s, request, ctx.provisioner()) },
  );
}
