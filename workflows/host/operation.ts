/**
 * Runs one of the host's operations inside the host workflow and records how it
 * ended: the outcome on the host's status on success, the error, a visible,
 * bounded backoff and the retry on failure, nothing held against the host when
 * the host itself cancelled it (a delete, a pause, a new desired state).
 */
import { CancellationScope, condition, isCancellation, log, patched, setCurrentDetails } from '@temporalio/workflow';
import { networkDataFrom } from './dhcp';
import type { HostSpec, Image, OperationName, ProvisioningState } from '../../model/host';
import { failureMessage } from '../common/failure-message';
import { DEFAULT_HOST_OPTIONS, type OperationKind, type OperationRecord } from '../../contracts/host';
import { ERROR_TYPE_OF, nextStateAfter, registrationFingerprint, type PowerStep } from './decide';
import type { OperationInput, OperationOutcome } from './operation-types';
import { withOperationLabel } from './operation-label';
import { credentialsAttempt } from './directives';
import { rebootServed } from './rules/power-requests';
import { powerPath } from './provisioners/power';
import { interruptReason, INTERRUPTIBLE } from './interrupt';
import { now, type HostContext } from './context';
import { markNodeLost, nodeGoneIn } from './rules/node-lost';
import { applyNodeSettings } from './rules/node-settings';
import { hostUid } from './uid';
import { hostCurrentDetails } from './ui-details';
import { customDeployMethod } from '../../model/custom-deploy';
import { pendingSettingsSteps, recordAppliedSettings } from '../../model/host-settings';
import { serviceableSettings } from './rules/servicing';
import { heldServiceable, heldToClean, settleHeld } from './rules/firmware-held-rules';
import { moveOperation } from './site-move';
import { powersOnWhenAvailable } from './rules/power-after-prepare';

const reasonOf = (text: string): string =>
  text.replace(/(^|\s)(\w)/g, (_m, _sp: string, c: string) => c.toUpperCase()).replace(/\s/g, '');

const MAX_OPERATION_RECORDS = 50;

/** operationHistory keys, as Metal3 names them, for the operations it times. */
const HISTORY_KEY: Partial<Record<OperationKind, OperationName>> = {
  enroll: 'register',
  inspect: 'inspect',
  provision: 'provision',
  deprovision: 'deprovision',
};

export interface OperationExtra {
  adopt?: true;
  power?: PowerStep;
  image?: Image;
  /** The image's whole content was checked against its checksum (the image cache): the direct provisioner need not read it again. */
  imageVerified?: true;
  /** Gives back the provisioning permit the operation holds (host-permit.ts), as soon as it has ended. */
  release?: () => void;
  /** When the host began waiting for that permit. */
  delayedSince?: string;
}

export interface OperationRunner {
  /** Runs one operation; true when it succeeded. */
  runOperation(op: OperationKind, state: ProvisioningState, extra?: OperationExtra): Promise<boolean>;
  /** Waits until `s.retryAt` (or a change that makes the wait moot). */
  waitForRetry(): Promise<void>;
  /** Sets `s.retryAt` from the error count (doubling, capped) and waits for it. */
  backoff(): Promise<void>;
}

export function operationRunner(ctx: HostContext): OperationRunner {
  const { s } = ctx;

  const runOperation = async (op: OperationKind, state: ProvisioningState, extra: OperationExtra = {}): Promise<boolean> => {
    const { adopt, power, image, imageVerified, release, delayedSince } = extra;
    const spec = s.spec;
    const tried = op === 'enroll' ? credentialsAttempt(s) : undefined;
    const uid = op === 'provision' ? hostUid(s) : undefined;
    if (tried) s.status.triedCredentials = tried;
    s.opSeq += 1;
    // An operation runs inside the host workflow, its activities labelled with it (a child workflow
    // per operation would cost ~12 events of its own and 3 more here); `inline` tells readers so.
    const record: OperationRecord = {
      seq: s.opSeq,
      kind: op,
      inline: true,
      state,
      startedAt: now(),
      outcome: 'running',
      ...(delayedSince ? { delayedSince } : {}),
    };
    ctx.running = record;
    s.operations = [...s.operations, record].slice(-MAX_OPERATION_RECORDS);
    const metric = HISTORY_KEY[op];
    // A steady state's registration (a re-adoption, a changed BMC) is not timed: BMO times only the host's first.
    const timed = state !== 'available' && state !== 'provisioned' && state !== 'externally provisioned';
    if (metric && timed) {
      s.status.operationHistory[metric] = { start: record.startedAt };
    }
    // A delete, a pause or a new desired state cancels an operation that is no longer wanted.
    const scope = new CancellationScope();
    let settled = false;
    if (INTERRUPTIBLE.has(op)) {
      condition(() => settled || interruptReason(s, op) !== undefined)
        .then(() => {
          if (settled) return;
          record.cancelReason = interruptReason(s, op);
          log.info('cancelling the running operation', { op, reason: record.cancelReason });
          scope.cancel();
        })
        // Only the host workflow's own cancellation ends this wait early; runOperation handles that.
        .catch(() => undefined);
    }
    // Registering again in a steady state for a changed spec (BMC settings, cleaning mode, hints) only updates
    // the node: not a second enrollment (attaching again after a detach or a lost node still is one).
    const refresh = op === 'enroll' && state !== 'registering' && !s.needsAttach && !s.detached && !s.nodeLost;
    // A clean (or a provisioned host's service) shows its named steps; the request it ran is done once it succeeds (a newer one stays).
    const stepped = op === 'clean' || op === 'service';
    const clean = stepped ? s.cleanRequest : undefined;
    // Without a request, the clean applies spec.raid / spec.firmware where they differ from what was applied;
    // a service, the spec.firmware change the host's HostUpdatePolicy lets it take (servicing-rules.ts).
    const settings = stepped && !clean ? (op === 'service' ? serviceableSettings(s) : pendingSettingsSteps(spec, s.status)) : undefined;
    // The held firmware change this service takes (firmware-held-rules.ts): settled only once it succeeds.
    const held = op === 'service' && !clean && s.firmwareHeld ? { id: s.firmwareHeld.id, steps: heldServiceable(s) } : undefined;
    const cleanSteps = clean ? clean.request : settings ? { steps: settings } : undefined;
    if (cleanSteps) record.steps = cleanSteps.steps.map((step) => step.name);
    const progress = (step: string): void => {
      record.step = step;
      setCurrentDetails(hostCurrentDetails(s, record));
    };
    // What was held (the state entered, the last operation's end) goes in this upsert, with the operation.
    ctx.flushIndex();
    ctx.indexForSearch();
    if (op === 'service') {
      // Metal3's operationalStatus while a provisioned host is serviced (the provisioning state stays provisioned).
      s.status.operationalStatus = 'servicing';
      ctx.indexForSearch();
    }
    // patch since v0.2.0
    const powerOnAfterPrepare = op === 'prepare' && powersOnWhenAvailable(s) && patched('lifecycle-events');
    try {
      const input: OperationInput = {
            ref: s.ref,
            spec,
            // The node Ironic just answered "not found" for is not asked for by its id again: a registration after
            // the loss looks for the host's node by boot MAC (and by name), one GET fewer per host at a fleet's loss.
            // An activity's input is not part of what a replay compares: no patch.
            nodeId: (op === 'enroll' && s.nodeLost?.nodeId === s.status.provisioning.ID ? '' : s.status.provisioning.ID) || undefined,
            powerOn: s.deleteRequested ? false : spec?.online,
            ...(uid ? { uid } : {}),
            ...(adopt ? { adopt: { image: s.status.provisioning.image } } : {}),
            ...(image ? { image } : {}),
            ...(imageVerified ? { imageVerified } : {}),
            ...(cleanSteps ? { clean: cleanSteps } : {}),
            ...(op === 'provision' && networkDataFrom(s) ? { networkDataFrom: networkDataFrom(s) } : {}),
            ...(powerOnAfterPrepare ? { powerOnAfterPrepare } : {}),
            ...(power
              ? {
                  power: {
                    ...power,
                    via: powerPath(spec, s.status.provisioning.ID || undefined),
                    softTimeoutSeconds: s.options.softPowerOffSeconds ?? DEFAULT_HOST_OPTIONS.softPowerOffSeconds,
                  },
                }
              : {}),
      };
      let outcome: OperationOutcome;
      try {
        outcome = await scope.run(() => withOperationLabel(`${record.seq}-${op}`, async () => {
          // The spec's node settings first, each attempt (rules/node-settings.ts): here, or by the step's activity.
          // A move between sites is the host's own sequence over both sites' Ironics (site-move.ts).
          if (op === 'move') return moveOperation(ctx, input, progress);
          const inStep = await applyNodeSettings(op, input);
          return ctx.provisioner().operations[op](inStep ? { ...input, settingsInStep: true } : input, progress);
        }));
      } finally {
        // Before the outcome is recorded, and before any backoff: the next host need not wait for either.
        release?.();
      }
      applyOutcome(op, outcome, spec);
      if (clean && s.cleanRequest?.id === clean.id) delete s.cleanRequest;
      // A change held while provisioned, applied by this clean: recorded as servicing records it (HostFirmwareComponents' status.updates).
      if (clean?.held) settleHeld(s, clean.id, clean.request.steps, now());
      if (settings) recordAppliedSettings(s.status, settings);
      if (held && held.steps.length > 0) settleHeld(s, held.id, held.steps, now());
      record.outcome = 'succeeded';
      record.endedAt = now();
      if (outcome.note) record.note = outcome.note;
      // An untimed one leaves the start it kept (BMO's, after a takeover) alone.
      if (metric && s.status.operationHistory[metric].start && timed) {
        s.status.operationHistory[metric].end = record.endedAt;
      }
      s.status.errorType = '';
      s.status.errorMessage = '';
      s.status.errorCount = 0;
      s.status.operationalStatus = s.detached ? 'detached' : 'OK';
      if (tried) s.status.goodCredentials = tried;
      // The outcome's search attributes wait for the host's next step in this task: the next operation's start
      // carries them, anything else flushes them first (host.ts).
      // patch since v0.2.0
      if (patched('lifecycle-events')) ctx.holdIndex();
      const next = nextStateAfter(op, state, s);
      ctx.setState(next);
      s.status.lastUpdated = record.endedAt;
      ctx.indexForSearch();
      const note = outcome.note ? ` (${outcome.note})` : '';
      if (refresh) {
        await ctx.writeStatus({ type: 'Normal', reason: 'RegistrationUpdated', message: `registration updated: the Ironic node now matches the spec and credentials; provisioning state ${next}${note}` });
      } else {
        await ctx.writeStatus({ type: 'Normal', reason: outcome.reason ?? `${reasonOf(op)}Succeeded`, message: `${op} succeeded; provisioning state ${next || 'unmanaged'}${note}` });
      }
      return true;
    } catch (err) {
      // An operator cancelling the host workflow itself ends it, without an error on the host.
      if (isCancellation(err) && CancellationScope.current().consideredCancelled) throw err;
      if (isCancellation(err) && record.cancelReason !== undefined) {
        record.outcome = 'cancelled';
        record.endedAt = now();
        s.status.lastUpdated = record.endedAt;
        await ctx.writeStatus({ type: 'Normal', reason: `${reasonOf(op)}Cancelled`, message: `${op} cancelled: ${record.cancelReason}` });
        return false;
      }
      // Ironic lost the node: not the host's failure. It registers again where it stands
      // (decide) and carries on at once: no error recorded, no backoff.
      if (op !== 'enroll' && nodeGoneIn(err)) {
        record.outcome = 'failed';
        record.endedAt = now();
        record.error = failureMessage(err);
        s.status.lastUpdated = record.endedAt;
        await ctx.writeStatus(markNodeLost(s, `${op} stopped: ${record.error}`, record.endedAt));
        return false;
      }
      record.outcome = 'failed';
      record.endedAt = now();
      record.error = failureMessage(err);
      s.status.errorType =
        (op === 'enroll' || op === 'move') && (state === 'provisioned' || state === 'externally provisioned')
          ? 'provisioned registration error'
          : ERROR_TYPE_OF[op];
      s.status.errorMessage = record.error;
      s.status.errorCount += 1;
      s.status.operationalStatus = 'error';
      s.status.lastUpdated = record.endedAt;
      ctx.indexForSearch();
      await ctx.writeStatus({ type: 'Warning', reason: reasonOf(s.status.errorType ?? 'error'), message: record.error });
      // Nothing runs while we back off: a spec change that fixes the cause (a new
      // image, corrected BMC settings) must be accepted, not refused as a conflict.
      ctx.running = undefined;
      await backoff();
      return false;
    } finally {
      settled = true;
      ctx.running = undefined;
      // A cancelled service leaves the host as it was (Ironic's node settled back to active).
      if (op === 'service' && s.status.operationalStatus === 'servicing') s.status.operationalStatus = s.status.errorType ? 'error' : 'OK';
      ctx.indexForSearch();
    }
  };

  const applyOutcome = (op: OperationKind, outcome: OperationOutcome, spec: HostSpec | undefined): void => {
    if (outcome.nodeId !== undefined) s.status.provisioning.ID = outcome.nodeId;
    if (outcome.poweredOn !== undefined) s.status.poweredOn = outcome.poweredOn;
    if (outcome.hardware) s.status.hardware = outcome.hardware;
    if (op === 'enroll' && spec) {
      s.registered = registrationFingerprint(spec);
      s.registeredDisablePowerOff = spec.disablePowerOff === true;
      s.status.provisioning.bootMode = spec.bootMode ?? 'UEFI';
      s.status.provisioning.rootDeviceHints = spec.rootDeviceHints;
    }
    if (op === 'provision' && spec?.image) s.status.provisioning.image = spec.image;
    // As BMO: a deploy that succeeded clears the count of failed ones (provisioning-retries.ts).
    if (op === 'provision' && s.status.provisioningFailCount) s.status.provisioningFailCount = 0;
    // As Metal3's status.provisioning.customDeploy.
    const method = customDeployMethod(spec);
    if (op === 'provision' && method) s.status.provisioning.customDeploy = { method };
    if (op === 'deprovision') delete s.status.provisioning.image;
    // Held for a provisioned host only: the available host it becomes takes the change as its clean (firmware-held-rules.ts).
    if (op === 'deprovision' && s.firmwareHeld) {
      if (!s.deleteRequested) heldToClean(s, now());
      delete s.firmwareHeld;
    }
    if (op === 'deprovision') delete s.status.provisioning.customDeploy;
    if (op === 'delete') s.status.provisioning.ID = '';
    // Attached (again) / detached: see decide() and host-directives.ts.
    if (op === 'enroll' && (s.needsAttach || s.detached)) {
      s.needsAttach = false;
      s.detached = false;
    }
    if (op === 'enroll') delete s.nodeLost;
    if (op === 'detach') {
      s.detached = true;
      s.needsAttach = true;
      s.registered = undefined;
    }
    if (op === 'inspect' && s.inspectionRequested) s.inspectionRequested = false;
    // As in Metal3, provisioning and deprovisioning power-cycle the host: a waiting reboot is served.
    if (op === 'reboot' || op === 'provision' || op === 'deprovision') s.power = rebootServed(s.power);
  };

  /** Wait before retrying a failed operation, unless the spec changes or a delete arrives first. */
  const backoff = async (): Promise<void> => {
    const { errorBackoffSeconds, maxErrorBackoffSeconds } = s.options;
    const seconds = Math.min(errorBackoffSeconds * 2 ** (s.status.errorCount - 1), maxErrorBackoffSeconds);
    s.retryAt = new Date(Date.now() + seconds * 1000).toISOString();
    await waitForRetry();
  };

  /**
   * Waits until `s.retryAt`. A host that keeps failing loops backoff → same
   * operation for as long as the cause lasts (a dead BMC: weeks), so its
   * history must be handed to a fresh run from here too, not only when idle:
   * the new run carries the error state and waits only what is left.
   */
  const waitForRetry = async (): Promise<void> => {
    const generation = s.generation;
    const deleteRequested = s.deleteRequested;
    const nudged = ctx.nudges;
    const changed = (): boolean => s.generation !== generation || s.deleteRequested !== deleteRequested || ctx.nudges !== nudged;
    const retryAt = Date.parse(s.retryAt ?? '');
    for (;;) {
      if (ctx.historyTooLong() && !changed()) await ctx.continueAsNewWithState();
      const remaining = retryAt - Date.now();
      if (remaining <= 0) break;
      const woken = await condition(() => changed() || ctx.historyTooLong(), remaining);
      if (!woken || changed()) break;
    }
    s.retryAt = undefined;
  };

  return { runOperation, waitForRetry, backoff };
}
