/**
 * One long-lived workflow per host: the host's single owner. It takes the
 * desired spec through a validated update, decides with `decide()`, and runs
 * each step as a child workflow, one at a time. It records failures in the
 * host's status and retries them after a visible, bounded backoff.
 */
import {
  ApplicationFailure,
  allHandlersFinished,
  CancellationScope,
  condition,
  continueAsNew,
  executeChild,
  isCancellation,
  log,
  ParentClosePolicy,
  patched,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { formatFieldErrors } from '../types/field-error';
import { emptyStatus, type HostSpec, type Image, type OperationName, type ProvisioningState } from '../types/host';
import { hostWorkflowId } from '../types/host-ref';
import { SEARCH_ATTRIBUTES } from '../types/search-attributes';
import { validateHostSpec } from '../types/validate';
import { parseBmcAddress } from '../types/bmc';
import { failureMessage } from './failure-message';
import {
  applySpecUpdate,
  setImageUpdate,
  DEFAULT_HOST_OPTIONS,
  type ApplySpecResult,
  deleteHostUpdate,
  hostViewQuery,
  applyDirectivesUpdate,
  restoreStatusUpdate,
  requestInspectionUpdate,
  powerRequestsUpdate,
  setPausedUpdate,
  type HostState,
  type HostView,
  type HostWorkflowInput,
  type OperationKind,
  type OperationRecord,
} from './definitions';
import { decide, ERROR_TYPE_OF, nextStateAfter, registrationFingerprint, specConflict, type PowerStep } from './decide';
import { OPERATION_WORKFLOWS } from './operations';
import type { OperationOutcome } from './operation-types';
import { applyDirectives, checkRestoredStatus, credentialsAttempt, requestInspection, restoreStatus } from './host-directives';
import {
  applyPowerRequestChange,
  checkPowerRequestChange,
  powerRequestsView,
  rebootServed,
  settlePowerRequests,
  type PowerRequestChange,
} from './power-requests';
import { powerPath } from './power-operations';
import { powerCheckDelayMs, readPower } from './power-check';
import { interruptReason, INTERRUPTIBLE } from './interrupt';
import { applyPause, checkPauseRequest } from './host-pause';
import type { HostEvent, KubernetesActivities } from '../activities/host-status-activities';

const kube = proxyActivities<KubernetesActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 10 },
});

/**
 * Status publishing in the background: retried for as long as the API server
 * is away (the server retries; no history per attempt), while the host's own
 * work goes on. A rejected write (4xx) is not retried.
 */
const kubeBackground = proxyActivities<KubernetesActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

/** Events kept for a status write still waiting on the API server; the oldest go first. */
const MAX_QUEUED_EVENTS = 50;

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

function initialState(input: HostWorkflowInput): HostState {
  return {
    ref: input.ref,
    generation: 0,
    status: emptyStatus(),
    deleteRequested: false,
    opSeq: 0,
    operations: [],
    options: { ...DEFAULT_HOST_OPTIONS, ...input.options },
  };
}

const now = (): string => new Date().toISOString();

export async function hostWorkflow(input: HostWorkflowInput): Promise<HostView> {
  const s: HostState = input.state ?? initialState(input);
  let running: OperationRecord | undefined;
  /** Bumped by the shim's updates (directives, restore, inspect) so waits notice them; Events they produce. */
  let nudges = 0;
  const pendingEvents: HostEvent[] = [];
  const nudge = (events: HostEvent[]): void => {
    nudges += 1;
    pendingEvents.push(...events);
  };
  /** Search attributes last upserted by this run (a new run upserts once at start). */
  let published: string | undefined;

  const view = (): HostView => ({
    ref: s.ref,
    spec: s.spec,
    status: s.status,
    generation: s.generation,
    deleteRequested: s.deleteRequested,
    currentOperation: running,
    operations: s.operations,
    retryAt: s.retryAt,
    power: powerRequestsView(s.power),
    ...(s.paused ? { paused: s.paused } : {}),
  });

  const publish = (): void => {
    const bmc = s.spec?.bmc ? parseBmcAddress(s.spec.bmc.address) : undefined;
    const pairs: Extract<Parameters<typeof upsertSearchAttributes>[0], unknown[]> = [
      { key: SEARCH_ATTRIBUTES.hostName, value: s.ref.name },
      { key: SEARCH_ATTRIBUTES.hostNamespace, value: s.ref.namespace },
      { key: SEARCH_ATTRIBUTES.provisioningState, value: s.status.provisioning.state || 'unmanaged' },
      { key: SEARCH_ATTRIBUTES.operationalStatus, value: s.status.operationalStatus },
      { key: SEARCH_ATTRIBUTES.bmcType, value: bmc?.ok ? bmc.value.type : 'unknown' },
    ];
    // An unchanged upsert still costs a history event and a visibility write;
    // skipping it is most of what the host workflow saves per operation.
    const fingerprint = JSON.stringify(pairs);
    if (fingerprint === published && patched('search-attributes-dedupe')) return;
    published = fingerprint;
    upsertSearchAttributes(pairs);
  };

  const setState = (state: ProvisioningState): void => {
    if (s.status.provisioning.state === state) return;
    s.status.provisioning.state = state;
    s.status.lastUpdated = now();
    publish();
  };

  /** One status write at a time; what changes meanwhile goes out with the next one. */
  const outbox = { busy: false, dirty: false, events: [] as HostEvent[] };
  const drainOutbox = async (): Promise<void> => {
    outbox.busy = true;
    try {
      while (outbox.dirty) {
        outbox.dirty = false;
        const events = outbox.events.splice(0);
        try {
          await kubeBackground.publishHostStatus({ ref: s.ref, status: s.status, events });
        } catch (err) {
          log.warn('could not publish host status', { error: failureMessage(err) });
        }
      }
    } finally {
      outbox.busy = false;
    }
  };

  /** Writes the status (and an Event) back to Kubernetes when this host is driven by the shim. */
  const sync = async (event?: HostEvent): Promise<void> => {
    if (!s.options.publishStatus) return;
    if (patched('background-status-publish')) {
      // Never awaited: an API server outage must not hold the host's state machine.
      if (event) outbox.events = [...outbox.events, event].slice(-MAX_QUEUED_EVENTS);
      outbox.dirty = true;
      if (!outbox.busy) void drainOutbox();
      return;
    }
    try {
      await kube.publishHostStatus({ ref: s.ref, status: s.status, event });
    } catch (err) {
      // The host's work goes on; the next transition publishes the whole status again.
      log.warn('could not publish host status', { error: failureMessage(err) });
    }
  };

  setHandler(hostViewQuery, view);

  /** Throws (rejecting the update, nothing applied) when the spec is invalid or conflicts with the running operation. */
  const checkSpec = (spec: HostSpec): void => {
    const valid = validateHostSpec(s.ref, spec);
    if (!valid.ok) {
      throw ApplicationFailure.create({
        type: 'InvalidSpec',
        message: formatFieldErrors(valid.errors),
        details: [valid.errors],
      });
    }
    const conflict = specConflict(s, valid.value.spec, running?.kind);
    if (conflict) throw ApplicationFailure.create({ type: 'Conflict', message: conflict });
  };

  const acceptSpec = (spec: HostSpec): ApplySpecResult => {
    const valid = validateHostSpec(s.ref, spec);
    if (!valid.ok) throw new Error('unreachable: the validator accepted an invalid spec');
    const changed = JSON.stringify(valid.value.spec) !== JSON.stringify(s.spec);
    if (changed) {
      s.spec = valid.value.spec;
      s.generation += 1;
      s.retryAt = undefined;
      publish();
    }
    return { generation: s.generation, changed, view: view() };
  };

  setHandler(applySpecUpdate, acceptSpec, { validator: checkSpec });

  const withImage = (image: Image | null): HostSpec => {
    if (!s.spec) throw ApplicationFailure.create({ type: 'NotFound', message: 'the host has no spec yet' });
    const spec: HostSpec = { ...s.spec };
    if (image) spec.image = image;
    else delete spec.image;
    return spec;
  };

  setHandler(
    setImageUpdate,
    (image: Image | null) => acceptSpec(withImage(image)),
    { validator: (image: Image | null) => checkSpec(withImage(image)) },
  );

  setHandler(applyDirectivesUpdate, (d) => {
    const { result, events } = applyDirectives(s, d);
    if (result.changed || events.length > 0) nudge(events);
    return result;
  });

  setHandler(
    restoreStatusUpdate,
    (status) => {
      const { events, ...result } = restoreStatus(s, status, now());
      if (result.restored) {
        publish();
        nudge(events);
      }
      return result;
    },
    { validator: checkRestoredStatus },
  );

  setHandler(requestInspectionUpdate, () => {
    const { events, ...result } = requestInspection(s);
    if (events.length > 0) nudge(events);
    return result;
  });

  setHandler(deleteHostUpdate, () => {
    const accepted = !s.deleteRequested;
    s.deleteRequested = true;
    s.retryAt = undefined;
    return { accepted };
  });

  setHandler(
    setPausedUpdate,
    (req) => {
      const { result, events } = applyPause(s, req, now());
      if (result.changed) nudge(events);
      return { ...result, idle: running === undefined };
    },
    { validator: checkPauseRequest },
  );

  setHandler(
    powerRequestsUpdate,
    (change: PowerRequestChange) => {
      s.power = applyPowerRequestChange(s.power, change);
      return powerRequestsView(s.power);
    },
    {
      validator: (change: PowerRequestChange) => {
        if (!s.spec) throw ApplicationFailure.create({ type: 'NotFound', message: 'the host has no spec yet' });
        if (s.deleteRequested) throw ApplicationFailure.create({ type: 'Conflict', message: 'the host is being deleted' });
        const errors = checkPowerRequestChange(change, s.spec);
        if (errors.length > 0) {
          throw ApplicationFailure.create({ type: 'InvalidRequest', message: formatFieldErrors(errors), details: [errors] });
        }
      },
    },
  );

  /** Runs one operation as a child workflow; true when it succeeded. */
  const runOperation = async (op: OperationKind, state: ProvisioningState, extra: { adopt?: true; power?: PowerStep } = {}): Promise<boolean> => {
    const { adopt, power } = extra;
    const spec = s.spec;
    const tried = op === 'enroll' ? credentialsAttempt(s) : undefined;
    if (tried) s.status.triedCredentials = tried;
    s.opSeq += 1;
    const record: OperationRecord = {
      seq: s.opSeq,
      kind: op,
      workflowId: `${hostWorkflowId(s.ref)}/${s.opSeq}-${op}`,
      state,
      startedAt: now(),
      outcome: 'running',
    };
    running = record;
    s.operations = [...s.operations, record].slice(-MAX_OPERATION_RECORDS);
    const metric = HISTORY_KEY[op];
    if (metric && state !== 'available' && state !== 'provisioned' && state !== 'externally provisioned') {
      s.status.operationHistory[metric] = { start: record.startedAt };
    }
    // A delete, a pause or a new desired state cancels an operation that is no longer wanted.
    const scope = new CancellationScope();
    let settled = false;
    if (INTERRUPTIBLE.has(op) && patched('interruptible-operations')) {
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
    try {
      const outcome: OperationOutcome = await scope.run(() => executeChild(OPERATION_WORKFLOWS[op], {
        workflowId: record.workflowId,
        args: [
          {
            ref: s.ref,
            spec,
            nodeId: s.status.provisioning.ID || undefined,
            powerOn: s.deleteRequested ? false : spec?.online,
            ...(adopt ? { adopt: { image: s.status.provisioning.image } } : {}),
            ...(power
              ? {
                  power: {
                    ...power,
                    via: powerPath(spec, s.status.provisioning.ID || undefined),
                    softTimeoutSeconds: s.options.softPowerOffSeconds ?? DEFAULT_HOST_OPTIONS.softPowerOffSeconds,
                  },
                }
              : {}),
          },
        ],
        parentClosePolicy: ParentClosePolicy.TERMINATE,
      }));
      applyOutcome(op, outcome, spec);
      record.outcome = 'succeeded';
      record.endedAt = now();
      if (outcome.note) record.note = outcome.note;
      if (metric && s.status.operationHistory[metric].start) s.status.operationHistory[metric].end = record.endedAt;
      s.status.errorType = '';
      s.status.errorMessage = '';
      s.status.errorCount = 0;
      s.status.operationalStatus = s.detached ? 'detached' : 'OK';
      if (tried) s.status.goodCredentials = tried;
      const next = nextStateAfter(op, state, s);
      setState(next);
      s.status.lastUpdated = record.endedAt;
      publish();
      const note = outcome.note ? ` (${outcome.note})` : '';
      await sync({ type: 'Normal', reason: `${reasonOf(op)}Succeeded`, message: `${op} succeeded; provisioning state ${next || 'unmanaged'}${note}` });
      return true;
    } catch (err) {
      // An operator cancelling the host workflow itself ends it, without an error on the host.
      if (isCancellation(err) && CancellationScope.current().consideredCancelled && patched('cancelled-host-not-failed')) throw err;
      if (isCancellation(err) && record.cancelReason !== undefined) {
        record.outcome = 'cancelled';
        record.endedAt = now();
        s.status.lastUpdated = record.endedAt;
        await sync({ type: 'Normal', reason: `${reasonOf(op)}Cancelled`, message: `${op} cancelled: ${record.cancelReason}` });
        return false;
      }
      record.outcome = 'failed';
      record.endedAt = now();
      record.error = failureMessage(err);
      s.status.errorType =
        op === 'enroll' && (state === 'provisioned' || state === 'externally provisioned')
          ? 'provisioned registration error'
          : ERROR_TYPE_OF[op];
      s.status.errorMessage = record.error;
      s.status.errorCount += 1;
      s.status.operationalStatus = 'error';
      s.status.lastUpdated = record.endedAt;
      publish();
      await sync({ type: 'Warning', reason: reasonOf(s.status.errorType ?? 'error'), message: record.error });
      // Nothing runs while we back off: a spec change that fixes the cause (a new
      // image, corrected BMC settings) must be accepted, not refused as a conflict.
      running = undefined;
      await backoff();
      return false;
    } finally {
      settled = true;
      running = undefined;
    }
  };

  const applyOutcome = (op: OperationKind, outcome: OperationOutcome, spec: HostSpec | undefined): void => {
    if (outcome.nodeId !== undefined) s.status.provisioning.ID = outcome.nodeId;
    if (outcome.poweredOn !== undefined) s.status.poweredOn = outcome.poweredOn;
    if (outcome.hardware) s.status.hardware = outcome.hardware;
    if (op === 'enroll' && spec) {
      s.registered = registrationFingerprint(spec);
      s.status.provisioning.bootMode = spec.bootMode ?? 'UEFI';
      s.status.provisioning.rootDeviceHints = spec.rootDeviceHints;
    }
    if (op === 'provision' && spec?.image) s.status.provisioning.image = spec.image;
    if (op === 'deprovision') delete s.status.provisioning.image;
    if (op === 'delete') s.status.provisioning.ID = '';
    // Attached (again) / detached: see decide() and host-directives.ts.
    if (op === 'enroll' && (s.needsAttach || s.detached)) {
      s.needsAttach = false;
      s.detached = false;
    }
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
    const nudged = nudges;
    const changed = (): boolean => s.generation !== generation || s.deleteRequested !== deleteRequested || nudges !== nudged;
    const retryAt = Date.parse(s.retryAt ?? '');
    if (patched('continue-as-new-from-backoff')) {
      for (;;) {
        if (historyTooLong() && !changed()) await continueAsNewWithState();
        const remaining = retryAt - Date.now();
        if (remaining <= 0) break;
        const woken = await condition(() => changed() || historyTooLong(), remaining);
        if (!woken || changed()) break;
      }
    } else {
      await condition(changed, retryAt - Date.now());
    }
    s.retryAt = undefined;
  };

  const continueAsNewWithState = async (): Promise<never> => {
    // The status write in flight finishes first: the next run starts from a published status.
    await condition(() => !outbox.busy && allHandlersFinished());
    return continueAsNew<typeof hostWorkflow>({ ref: s.ref, state: s });
  };

  /** Periodic check: a host whose power differs from its status (changed behind our back) is recorded and corrected. */
  const checkPower = async (): Promise<void> => {
    const observed = await readPower(s);
    if (observed === undefined || observed === s.status.poweredOn) return;
    const at = now();
    s.power = { ...(s.power ?? { holds: {}, seq: 0 }), lastMismatch: { at, observedOn: observed, recordedOn: s.status.poweredOn } };
    s.status.poweredOn = observed;
    s.status.lastUpdated = at;
    const message = `the host was found powered ${observed ? 'on' : 'off'} (recorded ${observed ? 'off' : 'on'}, spec.online ${String(s.spec?.online)})`;
    log.warn(message);
    await sync({ type: 'Warning', reason: 'PowerStateMismatch', message });
  };

  const historyTooLong = (): boolean =>
    workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > s.options.maxHistoryEvents;

  publish();
  // A run continued from a backoff waits out what was left of it before retrying.
  if (s.retryAt !== undefined && patched('continue-as-new-from-backoff')) await waitForRetry();
  for (;;) {
    // Events from the shim's updates, with the status they changed.
    for (const event of pendingEvents.splice(0)) await sync(event);
    if (s.paused && patched('paused')) {
      // Paused: nothing touches the hardware, deletion included (as in Metal3), until unpaused.
      if (historyTooLong()) await continueAsNewWithState();
      const nudged = nudges;
      await condition(() => !s.paused || nudges !== nudged || historyTooLong());
      continue;
    }
    s.power = settlePowerRequests(s.status.poweredOn, s.spec, s.power);
    const decision = decide(s);
    if (decision.kind === 'finish') break;
    if (decision.kind === 'enter') {
      const before = s.status.provisioning.state;
      setState(decision.state);
      await sync({ type: 'Normal', reason: 'StateChanged', message: `provisioning state ${before || 'none'} → ${decision.state}` });
      continue;
    }
    if (decision.kind === 'operation') {
      const before = s.status.provisioning.state;
      setState(decision.state);
      if (before !== decision.state) {
        await sync({ type: 'Normal', reason: 'StateChanged', message: `provisioning state ${before || 'unmanaged'} → ${decision.state}` });
      }
      const succeeded = await runOperation(decision.op, decision.state, { adopt: decision.adopt, power: decision.power });
      if (decision.op === 'delete' && succeeded) break;
      continue;
    }
    // Idle: the only time it is safe to hand our state to a fresh run.
    if (historyTooLong()) await continueAsNewWithState();
    const generation = s.generation;
    const deleteRequested = s.deleteRequested;
    const powerSeq = s.power?.seq;
    const nudged = nudges;
    const woken = () =>
      s.generation !== generation || s.deleteRequested !== deleteRequested || s.power?.seq !== powerSeq || nudges !== nudged || historyTooLong();
    const checkMs = powerCheckDelayMs(s);
    if (checkMs !== undefined && patched('power-check')) {
      // Whether the check is due is read from the clock, not from what ended the wait:
      // an update delivered in the timer's workflow task while the check's local
      // activity runs is replayed in the timer's activation, so "woken by the update"
      // on replay would skip a check the history holds (nondeterminism).
      const byClock = patched('power-check-by-clock');
      const dueAt = Date.now() + checkMs;
      const changed = await condition(woken, checkMs);
      if (byClock ? Date.now() >= dueAt : !changed) await checkPower();
    } else {
      await condition(woken);
    }
  }
  await condition(allHandlersFinished);
  return view();
}
