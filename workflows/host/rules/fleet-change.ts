/**
 * The host workflow's `fleetChange` update (contracts/fleet-change.ts): a
 * fleet operation's ask of this host. The validator decides from the host's
 * own state what the fleet used to decide from a query of it (fleetAsk), and
 * refuses what needs no change (nothing is written to history for a
 * refusal); an accepted ask is applied by the very handler of the update the
 * fleet used to send (powerRequests, setImage, deleteHost, requestInspection,
 * applyDirectives, applySpec, requestClean), after that update's own checks.
 *
 * No history before this update holds one, so adding it changes no replay.
 * Its handler runs again on replay and never decides: whatever it reads of
 * the state (the keys a powerOn releases, the spec a moveSite changes) is
 * what the validator read in the same activation.
 */
import { ApplicationFailure, setHandler } from '@temporalio/workflow';
import { FleetOperationSchema } from '../../../model/fleet';
import type { HostSpec, Image } from '../../../model/host';
import type { CleanRequest } from '../../../model/clean';
import { formatFieldErrors } from '../../../model/field-error';
import { schemaErrors } from '../../../model/validate';
import type { ApplySpecResult, DirectivesResult, HostDirectives } from '../../../contracts/host';
import { fleetPowerKey } from '../../../contracts/fleet';
import { keysToRelease } from '../../../contracts/fleet-goals';
import { FLEET_CHANGE, fleetAsk, fleetChangeUpdate, type FleetChangeRequest, type FleetChangeResult, type FleetViaObject } from '../../../contracts/fleet-change';
import { checkInspectionRequest } from '../directives';
import type { HostContext } from '../context';
import type { PowerRequestChange, PowerRequestsView } from './power-requests';
import type { CleanHandler } from './clean-request';

/** The other updates' handlers and validators (handlers.ts), run here as they run there. */
export interface FleetChangeTargets {
  acceptSpec(spec: HostSpec): ApplySpecResult;
  checkSpec(spec: HostSpec): void;
  setImage(image: Image | null): ApplySpecResult;
  checkImage(image: Image | null): void;
  directives(d: HostDirectives): DirectivesResult;
  inspect(): { accepted: boolean; pending: boolean };
  deleteHost(): { accepted: boolean };
  power(change: PowerRequestChange): PowerRequestsView;
  checkPower(change: PowerRequestChange): void;
  clean: CleanHandler;
}

const invalid = (message: string): never => {
  throw ApplicationFailure.create({ type: 'InvalidRequest', message });
};

/** The request's shape (a caller other than the fleet's activity, e.g. the CLI, may send anything). */
function checkShape(req: FleetChangeRequest): void {
  if (typeof req !== 'object' || req === null) invalid('fleetChange needs {fleet, operation, since}');
  if (typeof req.fleet !== 'string' || req.fleet === '') invalid('fleet: must be the fleet operation\'s name');
  if (typeof req.since !== 'string' || Number.isNaN(Date.parse(req.since))) invalid('since: must be a time (ISO 8601)');
  const errors = schemaErrors(FleetOperationSchema, req.operation, 'operation');
  if (errors.length > 0) throw ApplicationFailure.create({ type: 'InvalidRequest', message: formatFieldErrors(errors), details: [errors] });
  if ((req.operation.kind as string) === 'remediate') invalid('operation.kind: a remediation is not a change of the host workflow (start one instead)');
}

/** The change as the update the fleet used to send gives it. */
function powerChange(req: FleetChangeRequest, holds: Record<string, unknown>): PowerRequestChange | undefined {
  const op = req.operation;
  if (op.kind === 'reboot') return { reboot: { mode: op.mode ?? 'soft' } };
  if (op.kind === 'powerOff') return { holdOff: { [fleetPowerKey(req.fleet)]: op.mode ?? 'soft' } };
  if (op.kind === 'powerOn') return { release: keysToRelease(op, holds) };
  return undefined;
}

export function setFleetChangeHandler(ctx: HostContext, to: FleetChangeTargets): void {
  const { s } = ctx;

  const validator = (req: FleetChangeRequest): void => {
    checkShape(req);
    const view = ctx.view();
    const answer = fleetAsk(req.operation, view, req.since, req.fleet, { kubernetes: req.kubernetes === true });
    switch (answer.kind) {
      case 'settled': {
        const { result } = answer;
        const why = result.outcome === 'failed' ? result.error : result.outcome === 'succeeded' ? 'already done' : result.reason;
        throw ApplicationFailure.create({ type: FLEET_CHANGE.settled, message: `nothing asked of the host (${result.outcome}): ${why}`, details: [result] });
      }
      case 'wait':
        throw ApplicationFailure.create({ type: FLEET_CHANGE.wait, message: `nothing asked of the host: ${answer.why}` });
      case 'viaObject':
        throw ApplicationFailure.create({
          type: FLEET_CHANGE.viaObject,
          message: 'the host is driven by its BareMetalHost: change the object',
          details: [{ holds: view.power.holds } satisfies FleetViaObject],
        });
      case 'send':
        break;
    }
    const op = req.operation;
    const power = powerChange(req, s.power?.holds ?? {});
    if (power) return to.checkPower(power);
    switch (op.kind) {
      case 'provision':
        return to.checkImage(op.image);
      case 'deprovision':
        return to.checkImage(null);
      case 'reinspect':
        return checkInspectionRequest(s);
      case 'moveSite':
        return to.checkSpec({ ...s.spec!, site: op.site });
      case 'clean':
        return to.clean.check({ steps: op.steps as CleanRequest['steps'] });
      default:
        // delete, detach, attach: their updates take any host (the fleet's own checks came first).
        return;
    }
  };

  const handler = (req: FleetChangeRequest): FleetChangeResult => {
    const op = req.operation;
    const seq = s.power?.seq;
    const power = powerChange(req, s.power?.holds ?? {});
    if (power) {
      to.power(power);
      return { changed: s.power?.seq !== seq };
    }
    switch (op.kind) {
      case 'provision':
        return { changed: to.setImage(op.image).changed };
      case 'deprovision':
        return { changed: to.setImage(null).changed };
      case 'delete':
        return { changed: to.deleteHost().accepted };
      case 'reinspect': {
        const before = s.inspectionRequested;
        to.inspect();
        return { changed: s.inspectionRequested !== before };
      }
      // An API host's directives hold only what the fleet gives them (the shim's hosts are its BareMetalHost's): the whole set is replaced.
      case 'detach':
        return { changed: to.directives({ detached: { deleteAction: op.deleteAction ?? 'delete', force: op.force ?? false } }).changed };
      case 'attach':
        return { changed: to.directives({}).changed };
      case 'moveSite':
        return { changed: to.acceptSpec({ ...s.spec!, site: op.site }).changed };
      case 'clean':
        return { changed: to.clean.apply({ steps: op.steps as CleanRequest['steps'] }).changed };
      default:
        return { changed: false };
    }
  };

  setHandler(fleetChangeUpdate, handler, { validator });
}
