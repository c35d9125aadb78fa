/**
 * The host workflow's query and updates: the desired spec (validated, and
 * refused while it conflicts with the running operation), the image, the
 * shim's directives, a restored status, inspection, deletion, pausing and
 * power requests. Each handler changes the host's state only; the main loop
 * notices and acts.
 */
import { ApplicationFailure, setHandler } from '@temporalio/workflow';
import { formatFieldErrors } from '../../model/field-error';
import type { HostSpec, Image } from '../../model/host';
import { validateHostSpec } from '../../model/validate';
import { validateLabels } from '../../model/labels';
import { normalizeHostSpec } from '../../model/spec-normal-form';
import {
  applySpecUpdate,
  setImageUpdate,
  type ApplySpecResult,
  type HostMetadata,
  deleteHostUpdate,
  hostViewQuery,
  applyDirectivesUpdate,
  type DirectivesResult,
  type HostDirectives,
  restoreStatusUpdate,
  requestInspectionUpdate,
  powerRequestsUpdate,
  setPausedUpdate,
  recordMoveUpdate,
  powerChangedSignal,
  publishStatusSignal,
} from '../../contracts/host';
import { specConflict } from './decide';
import { siteChangeConflict, siteMoveFor } from './rules/site';
import { applyDirectives, checkRestoredStatus, requestInspection, restoreStatus } from './directives';
import { addedHolds, applyPowerRequestChange, checkPowerRequestChange, keyedRebootEvent, powerRequestsView, type PowerRequestChange, type PowerRequestsView } from './rules/power-requests';
import { setFleetChangeHandler } from './rules/fleet-change';
import { applyPause, checkPauseRequest } from './rules/pause';
import { now, type HostContext } from './context';
import { setCleanHandler } from './rules/clean-request';
import { setUpdatePolicyHandler } from './rules/update-policy';
import { setHoldFirmwareHandler } from './rules/firmware-held';
import { setFailCountResetHandler } from './rules/fail-count-reset';

export function setHostHandlers(ctx: HostContext): void {
  const { s } = ctx;
  setHandler(hostViewQuery, ctx.view);
  const clean = setCleanHandler(ctx);
  setUpdatePolicyHandler(ctx);
  setHoldFirmwareHandler(ctx);
  setFailCountResetHandler(ctx);

  /** Throws (rejecting the update, nothing applied) when the spec is invalid or conflicts with the running operation. */
  const checkSpec = (spec: HostSpec, meta?: HostMetadata): void => {
    const valid = validateHostSpec(s.ref, spec);
    const errors = [...(valid.ok ? [] : valid.errors), ...(meta?.labels ? validateLabels(meta.labels, 'metadata.labels') : [])];
    if (!valid.ok || errors.length > 0) {
      throw ApplicationFailure.create({
        type: 'InvalidSpec',
        message: formatFieldErrors(errors),
        details: [errors],
      });
    }
    const conflict = siteChangeConflict(s, valid.value.spec, ctx.running?.kind) ?? specConflict(s, valid.value.spec, ctx.running?.kind);
    if (conflict) throw ApplicationFailure.create({ type: 'Conflict', message: conflict });
  };

  /**
   * The spec as stored. Only the validator validates: it runs when the update
   * arrives, the handler on every replay as well, so a rule tightened since
   * must not decide what the handler of an old history does.
   */
  const normalForm = (spec: HostSpec): HostSpec => normalizeHostSpec(spec);

  const acceptSpec = (input: HostSpec, meta?: HostMetadata): ApplySpecResult => {
    if (meta?.labels !== undefined) s.labels = { ...meta.labels };
    const spec = normalForm(input);
    const changed = JSON.stringify(spec) !== JSON.stringify(s.spec);
    if (changed) {
      // A registered host's new site is a move (site-move.ts); the validator refused such a spec before moves
      // existed, so no earlier history holds one.
      const move = siteMoveFor(s, spec, now());
      if (move) s.siteMove = move;
      s.spec = spec;
      s.generation += 1;
      s.retryAt = undefined;
      ctx.indexForSearch();
    }
    return { generation: s.generation, changed, power: powerRequestsView(s.power) };
  };

  setHandler(applySpecUpdate, acceptSpec, { validator: checkSpec });

  const withImage = (image: Image | null): HostSpec => {
    if (!s.spec) throw ApplicationFailure.create({ type: 'NotFound', message: 'the host has no spec yet' });
    const spec: HostSpec = { ...s.spec };
    if (image) spec.image = image;
    else delete spec.image;
    return spec;
  };

  const setImage = (image: Image | null): ApplySpecResult => acceptSpec(withImage(image));
  const checkImage = (image: Image | null): void => checkSpec(withImage(image));
  setHandler(setImageUpdate, setImage, { validator: checkImage });

  // The power sentinel saw the node change (power-sentinel.ts): the host reads its power itself when idle (host.ts).
  // Not a nudge: that would cut an error backoff short or redo an image check.
  setHandler(powerChangedSignal, () => {
    // A host that knows its node is lost registers again anyway; the sentinel repeats a lost node's hint.
    if (s.nodeLost) return;
    s.powerCheckAsked = true;
  });

  // The controller saw the object's status behind the host's own (a write lost with its worker): written again as it stands.
  setHandler(publishStatusSignal, () => void ctx.writeStatus());

  const directives = (d: HostDirectives, spec?: HostSpec): DirectivesResult => {
    const { result, events } = applyDirectives(s, d);
    if (result.changed || events.length > 0) ctx.nudge(events);
    // Histories recorded before the spec came with the directives hold no second argument.
    return spec ? { ...result, spec: acceptSpec(spec) } : result;
  };
  setHandler(
    applyDirectivesUpdate,
    directives,
    // Validators do not run on replay: the update of an old history is not checked again.
    { validator: (_d: HostDirectives, spec?: HostSpec): void => (spec ? checkSpec(spec) : undefined) },
  );

  setHandler(
    restoreStatusUpdate,
    (status) => {
      const { events, ...result } = restoreStatus(s, status, now());
      if (result.restored) {
        ctx.indexForSearch();
        ctx.nudge(events);
      }
      return result;
    },
    { validator: checkRestoredStatus },
  );

  const inspect = (): { accepted: boolean; pending: boolean } => {
    const { events, ...result } = requestInspection(s);
    if (events.length > 0) ctx.nudge(events);
    return result;
  };
  setHandler(requestInspectionUpdate, inspect);

  const deleteHost = (): { accepted: boolean } => {
    const accepted = !s.deleteRequested;
    s.deleteRequested = true;
    s.retryAt = undefined;
    return { accepted };
  };
  setHandler(deleteHostUpdate, deleteHost);

  setHandler(
    setPausedUpdate,
    (req) => {
      const { result, events } = applyPause(s, req, now());
      if (result.changed) ctx.nudge(events);
      return { ...result, idle: ctx.running === undefined };
    },
    { validator: checkPauseRequest },
  );

  const power = (change: PowerRequestChange): PowerRequestsView => {
    const rememberIds = change.reboot?.requestId !== undefined;
    // As Metal3: a keyed power-off request on a host whose power must never go off reboots it once.
    const rebooted = s.spec?.disablePowerOff ? addedHolds(s.power, change) : [];
    const rebootForKeys = rebooted.length > 0;
    s.power = applyPowerRequestChange(s.power, change, rememberIds, rebootForKeys);
    if (rebootForKeys) ctx.nudge(rebooted.map(([key, mode]) => keyedRebootEvent(key, mode)));
    return powerRequestsView(s.power);
  };
  const checkPower = (change: PowerRequestChange): void => {
    if (!s.spec) throw ApplicationFailure.create({ type: 'NotFound', message: 'the host has no spec yet' });
    if (s.deleteRequested) throw ApplicationFailure.create({ type: 'Conflict', message: 'the host is being deleted' });
    const errors = checkPowerRequestChange(change);
    if (errors.length > 0) {
      throw ApplicationFailure.create({ type: 'InvalidRequest', message: formatFieldErrors(errors), details: [errors] });
    }
  };
  setHandler(powerRequestsUpdate, power, { validator: checkPower });

  // The fleet's ask: the same changes and checks as the updates above, after the fleet's own (rules/fleet-change.ts).
  setFleetChangeHandler(ctx, { acceptSpec, checkSpec, setImage, checkImage, directives, inspect, deleteHost, power, checkPower, clean });

  // A record only: no nudge, the loop has nothing to do for it.
  setHandler(
    recordMoveUpdate,
    (moved) => {
      s.movedTo = moved;
      return { recorded: true as const };
    },
    {
      validator: (moved) => {
        // Only a host handed over: detached from this plane's Ironic (the pivot's hand-over) or already going.
        if (!s.detached && !s.deleteRequested) {
          throw ApplicationFailure.create({ type: 'Conflict', message: 'only a detached host can be recorded as moved (a pivot detaches it at hand-over)' });
        }
        if (typeof moved?.pivot !== 'string' || moved.pivot === '' || typeof moved.at !== 'string' || typeof moved.target !== 'object') {
          throw ApplicationFailure.create({ type: 'InvalidRequest', message: 'recordMove needs {pivot, at, target}' });
        }
      },
    },
  );
}
