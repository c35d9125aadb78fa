/**
 * What the HTTP API does for a host, in Temporal terms: update-with-start the
 * host's workflow, query it, list hosts through search attributes. Secret
 * values are written to the secret store here and never passed on.
 */
import { WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure, type UpdateDefinition } from '@temporalio/common';
import type { FieldError } from '../model/field-error';
import type { CleanRequest } from '../model/clean';
import type { HostRef, HostSpec, HostStatus, Image, ProvisioningState } from '../model/host';
import { hostWorkflowId, validateHostRef } from '../model/host-ref';
import { hostRun, hostWorkflowStart, lastHostView, readoptHost, readoptMessage, type HostRun } from '../control/host-run';
import { hostListClauses, hostListItem, runningHosts, type HostListItem } from '../control/host-list';
import { validateHostSpec } from '../model/validate';
import { siteErrors } from '../model/site';
import { validateLabels } from '../model/labels';
import type { Lease } from '../clients/secrets/secret-store';
import { LeaseBusy, LeaseLost } from '../clients/secrets/file-lease';
import { HostSecrets } from './host-secrets';
import { DeletedHostSweep } from './deleted-host-sweep';
import {
  applyDirectivesUpdate,
  applySpecUpdate,
  deleteHostUpdate,
  hostViewQuery,
  powerRequestsUpdate,
  requestCleanUpdate,
  setImageUpdate,
  setPausedUpdate,
  type HostDirectives,
  type HostMetadata,
  type HostView,
  type HostWorkflowOptions,
} from '../contracts/host';
import type { PowerRequestChange, RebootMode } from '../contracts/power-requests';
import { temporalBusy } from './temporal-errors';
import { ApiError, busyError } from './api-error';

export { ApiError, busyError };

export type { EndedHostView, HostInput, HostServiceDeps } from './host-service-types';
import type { EndedHostView, HostInput, HostServiceDeps } from './host-service-types';

const DEFAULT_UPDATE_TIMEOUT_MS = 60_000;

const invalid = (errors: FieldError[]): ApiError =>
  new ApiError(400, 'InvalidSpec', errors.map((e) => `${e.field}: ${e.reason}`).join('; '), errors);

export class HostService {
  private readonly secrets: HostSecrets;
  private readonly locks = new Map<string, Promise<void>>();
  private leaseWaiting = 0;
  /** Deleted hosts whose secrets go once their delete has completed. */
  private readonly deletes: DeletedHostSweep;

  constructor(private readonly deps: HostServiceDeps) {
    this.secrets = new HostSecrets(deps.secrets);
    this.deletes = new DeletedHostSweep(async (ref) => {
      const run = await hostRun(this.deps.client, ref);
      if (run.kind === 'deleted') await this.sweepIfDeleted(ref);
      return run.kind === 'deleted' || run.kind === 'absent';
    });
  }

  /** Requests of this process now waiting for a host's lease another process holds. */
  get leaseWaits(): number {
    return this.leaseWaiting;
  }

  /** Deletes sent by this process whose host has not yet been seen gone (their secrets still to remove). */
  get pendingDeletes(): number {
    return this.deletes.size;
  }

  /** Stops the background checks of deleted hosts (the process is ending). */
  close(): void {
    this.deletes.close();
  }

  private log(message: string): void {
    (this.deps.log ?? ((m: string) => console.warn(m)))(message);
  }

  get client(): Client {
    return this.deps.client;
  }

  /** Where host workflows run (and fleet operations, on the same worker). */
  get taskQueue(): string {
    return this.deps.taskQueue;
  }

  /** Names of the configured sites besides the default one (what `spec.site` and a fleet's `selector.sites` may name). */
  get sites(): readonly string[] {
    return this.deps.sites ?? [];
  }

  private checkRef(ref: HostRef): void {
    const valid = validateHostRef(ref);
    if (!valid.ok) throw invalid(valid.errors);
  }

  /** Creates the host or replaces its spec. Either everything is applied or nothing is. */
  put(ref: HostRef, input: HostInput): Promise<{ created: boolean; view: HostView }> {
    this.checkRef(ref);
    return this.serialized(ref, (lease) => this.putNow(ref, input, lease));
  }

  private async putNow(ref: HostRef, input: HostInput, lease: Lease): Promise<{ created: boolean; view: HostView }> {
    // A site that holds its hosts' BMC credentials: the API neither stores nor looks for them.
    const site = input.spec.site;
    const heldAt = site !== undefined && (this.deps.credentialSites ?? []).includes(site) ? site : undefined;
    const prepared = this.secrets.writesFor(ref, input, heldAt);
    if ('errors' in prepared) throw invalid(prepared.errors);
    const { writes } = prepared;
    const valid = validateHostSpec(ref, prepared.spec);
    const labelErrors = input.metadata?.labels ? validateLabels(input.metadata.labels, 'metadata.labels') : [];
    const siteErrs = siteErrors(prepared.spec.site, this.deps.sites ?? []);
    if (!valid.ok || labelErrors.length > 0 || siteErrs.length > 0) throw invalid([...(valid.ok ? [] : valid.errors), ...labelErrors, ...siteErrs]);
    const run = await hostRun(this.deps.client, ref);
    const creating = run.kind === 'absent' || run.kind === 'deleted';
    if (input.status && !creating) throw new ApiError(409, 'Conflict', `status: taken only when the host is created; ${ref.namespace}/${ref.name} exists (${run.kind})`);
    // A create: what an earlier host of this name left behind is not this host's.
    if (creating) {
      await this.held(lease);
      await this.secrets.removeOwned(ref);
    }
    const errors = await this.secrets.check(ref, valid.value.spec, writes, async () => {
      if (run.kind === 'running') return (await this.handle(ref).query(hostViewQuery)).spec;
      return run.kind === 'ended' ? (await this.lastView(ref)).spec : undefined;
    }, heldAt);
    if (errors.length > 0) throw invalid(errors);

    await this.held(lease);
    const previous = await this.secrets.write(ref, writes);
    let created: boolean;
    try {
      if (input.status) return { created: true, view: await this.startRestored(ref, input.status, valid.value.spec, input.metadata?.labels) };
      // A host whose workflow ended abnormally comes back with its last status and takes the new spec.
      // A create read the run under the host's lease already: nothing else starts one meanwhile, so it is not read again.
      const readopted = await this.readoptIfEnded(ref, { mustExist: false, spec: valid.value.spec, labels: input.metadata?.labels }, creating ? run : undefined);
      const startWorkflowOperation = hostWorkflowStart(ref, this.deps.taskQueue, this.deps.hostOptions);
      const result = await this.bounded(() =>
        this.deps.client.workflow.executeUpdateWithStart(applySpecUpdate, { args: input.metadata ? [valid.value.spec, input.metadata] : [valid.value.spec], startWorkflowOperation }),
      );
      created = !readopted && result.generation === 1 && result.changed;
    } catch (err) {
      // Put the secrets back as they were, so a rejected change leaves nothing behind.
      // Not after a timeout: the server may still apply the spec, which then needs them.
      if (temporalBusy(err)?.nothingApplied === false) throw this.translate(err);
      // Past its lease, another replica may have written since: putting back would erase its secrets.
      await this.held(lease, 'the change was not applied, and its secrets could not be put back');
      await this.secrets.restore(ref, previous);
      throw this.translate(err);
    }
    // The view is read after the update, outside the put-back above: the change is applied, and a
    // failed read must not undo its secrets. (The update answers a summary: its result is history.)
    try {
      return { created, view: await this.handle(ref).query(hostViewQuery) };
    } catch (err) {
      throw this.translate(err);
    }
  }

  /**
   * One change of a host's secrets at a time: two PUTs interleaving their writes and put-backs
   * would leave one's secrets under the other's spec. Within this process the changes queue here;
   * across API replicas each takes the host's lease in the secret store.
   */
  private serialized<T>(ref: HostRef, fn: (lease: Lease) => Promise<T>): Promise<T> {
    const key = hostWorkflowId(ref);
    const run = (this.locks.get(key) ?? Promise.resolve()).then(() => this.leased(ref, fn));
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.locks.set(key, tail);
    void tail.then(() => {
      if (this.locks.get(key) === tail) this.locks.delete(key);
    });
    return run;
  }

  private async leased<T>(ref: HostRef, fn: (lease: Lease) => Promise<T>): Promise<T> {
    let lease: Lease;
    try {
      lease = await this.deps.secrets.lease(ref.namespace, ref.name, {
        waitMs: this.deps.updateTimeoutMs ?? DEFAULT_UPDATE_TIMEOUT_MS,
        onWait: (done) => (this.leaseWaiting += done ? -1 : 1),
      });
    } catch (err) {
      if (!(err instanceof LeaseBusy)) throw err;
      throw new ApiError(503, 'Unavailable', `host ${ref.namespace}/${ref.name}: another change of it is still in progress (on another API replica); nothing was changed, send it again`, [], 2);
    }
    try {
      return await fn(lease);
    } finally {
      await lease.release();
    }
  }

  /** Throws a 503 when this process may no longer hold the host's lease (`what` happened, if anything). */
  private async held(lease: Lease, what = 'nothing was changed'): Promise<void> {
    try {
      await lease.check();
    } catch (err) {
      if (!(err instanceof LeaseLost)) throw err;
      throw new ApiError(503, 'Unavailable', `this API replica lost the host's change lease (${err.message}): ${what}; send it again`, [], 2);
    }
  }

  /** Removes a deleted host's secrets; checked again in turn with PUTs, so a create racing it keeps its own. */
  private sweepIfDeleted(ref: HostRef): Promise<void> {
    return this.serialized(ref, async (lease) => {
      if ((await hostRun(this.deps.client, ref)).kind !== 'deleted') return;
      await this.held(lease);
      const removed = await this.secrets.removeOwned(ref);
      if (removed.length > 0) this.log(`host ${ref.namespace}/${ref.name}: deleted; removed its secrets ${removed.join(', ')}`);
    });
  }

  async setImage(ref: HostRef, image: Image | null): Promise<HostView> {
    this.checkRef(ref);
    const run = await hostRun(this.deps.client, ref);
    if (run.kind === 'deleted') await this.sweepIfDeleted(ref);
    this.exists(ref, run);
    // A running host is not read first: the update's validator checks its spec with the image
    // (workflows/host/handlers.ts) and a refused update changes nothing. A query before it was a
    // workflow task on the worker for every set image, taken before the update's own. An ended
    // host is checked against its last spec before it is re-adopted, which a refusal would not undo.
    if (image && run.kind === 'ended') {
      const last = await this.lastView(ref);
      if (last.spec) {
        const valid = validateHostSpec(ref, { ...last.spec, image });
        if (!valid.ok) throw invalid(valid.errors);
      }
    }
    await this.readoptIfEnded(ref, { mustExist: true }, run);
    try {
      await this.bounded(() => this.handle(ref).executeUpdate(setImageUpdate, { args: [image] }));
      return await this.handle(ref).query(hostViewQuery);
    } catch (err) {
      throw this.translate(err);
    }
  }

  /**
   * One-shot reboot (Metal3's reboot.metal3.io): soft first, hard if that fails; or hard.
   * With `requestId` (the Idempotency-Key header) a request sent again is the same reboot:
   * Temporal answers a repeated update id from the first one's outcome, and the host
   * remembers its last ids beyond that (across continue-as-new).
   */
  reboot(ref: HostRef, mode: RebootMode = 'soft', requestId?: string): Promise<HostView> {
    return this.changePower(ref, { reboot: { mode, ...(requestId !== undefined ? { requestId } : {}) } }, requestId && `reboot/${requestId}`);
  }

  /** Keyed power-off request (reboot.metal3.io/<key>): the host stays off until every key is released. */
  holdPowerOff(ref: HostRef, key: string, mode: RebootMode = 'soft'): Promise<HostView> {
    return this.changePower(ref, { holdOff: { [key]: mode } });
  }

  releasePowerOff(ref: HostRef, key: string): Promise<HostView> {
    return this.changePower(ref, { release: [key] });
  }

  /** Pause (nothing touches the hardware; a running operation is cancelled) or resume the host. */
  setPaused(ref: HostRef, paused: boolean, reason?: string): Promise<HostView> {
    return this.update(ref, setPausedUpdate, [{ paused, ...(reason ? { reason } : {}) }]);
  }

  /**
   * `PUT/DELETE …/detached`, as Metal3's detached annotation: the host leaves Ironic without
   * deprovisioning or a power change (its node deleted as it is), or comes back (registered, adopted).
   * An API host has no other directive, so these are all of them.
   */
  setDetached(ref: HostRef, detached: HostDirectives['detached']): Promise<HostView> {
    return this.update(ref, applyDirectivesUpdate, [detached ? { detached } : {}]);
  }

  /**
   * Sends one of the host workflow's updates (a host whose workflow ended abnormally is re-adopted
   * first); `check` may refuse after reading the host's view. Answers the view after it.
   */
  async update<R, A extends unknown[]>(ref: HostRef, def: UpdateDefinition<R, A>, args: A, check?: (view: HostView) => void): Promise<HostView> {
    this.checkRef(ref);
    await this.readoptIfEnded(ref);
    if (check) check(await this.handle(ref).query(hostViewQuery));
    const handle = this.handle(ref);
    // The SDK types an update with no arguments and one with some by two overloads; this serves both.
    const execute = handle.executeUpdate as unknown as (d: UpdateDefinition<R, A>, o: { args: A }) => Promise<R>;
    try {
      await this.bounded(() => execute.call(handle, def, { args }));
    } catch (err) {
      throw this.translate(err);
    }
    return this.handle(ref).query(hostViewQuery);
  }

  /** A new host that takes `status` first (restoreStatus), then its spec: it registers and adopts, as a re-adopted one does. */
  private async startRestored(ref: HostRef, status: HostStatus, spec: HostSpec, labels?: Record<string, string>): Promise<HostView> {
    const result = await this.bounded(() => readoptHost(this.deps.client, { ref, taskQueue: this.deps.taskQueue, options: this.deps.hostOptions, status, spec, labels }));
    if (!result.restored) throw new ApiError(409, 'Conflict', `status: not taken: ${result.reason ?? 'the host has a status'}`);
    this.log(`host ${ref.namespace}/${ref.name}: created from a given status (provisioning state ${status.provisioning.state || 'unmanaged'})`);
    return this.handle(ref).query(hostViewQuery);
  }

  /**
   * `PUT …/raid`: Metal3's spec.raid (null clears it) put into the host's spec, validated and applied
   * as a whole spec is; applied while the host prepares, held on a provisioned host (host-settings.ts).
   */
  async setRaid(ref: HostRef, raid: HostSpec['raid']): Promise<HostView> {
    const { spec } = await this.get(ref);
    if (!spec) throw new ApiError(409, 'Conflict', `host ${ref.namespace}/${ref.name} has no spec yet`);
    return (await this.put(ref, { spec: { ...spec, raid } })).view;
  }

  /** Manual cleaning (`request` validated by the route), or null to withdraw it. */
  clean(ref: HostRef, request: CleanRequest | null): Promise<HostView> {
    return this.update(ref, requestCleanUpdate, [request]);
  }

  private async changePower(ref: HostRef, change: PowerRequestChange, updateId?: string): Promise<HostView> {
    this.checkRef(ref);
    await this.readoptIfEnded(ref);
    try {
      await this.bounded(() => this.handle(ref).executeUpdate(powerRequestsUpdate, { args: [change], ...(updateId ? { updateId } : {}) }));
    } catch (err) {
      throw this.translate(err);
    }
    return this.handle(ref).query(hostViewQuery);
  }

  /** A host whose workflow ended abnormally reads as its last state with `workflowEnded`; nothing is started. */
  async get(ref: HostRef): Promise<HostView | EndedHostView> {
    this.checkRef(ref);
    const found = await hostRun(this.deps.client, ref);
    if (found.kind === 'deleted') await this.sweepIfDeleted(ref);
    const run = this.exists(ref, found);
    if (run.kind === 'running') return this.handle(ref).query(hostViewQuery);
    const view = await this.lastView(ref);
    return { ...view, workflowEnded: this.ended(run) };
  }

  /** Re-adopts a host whose workflow ended abnormally (any change does too); a running host is left as it is. */
  async adopt(ref: HostRef): Promise<HostView> {
    this.checkRef(ref);
    await this.readoptIfEnded(ref);
    return this.handle(ref).query(hostViewQuery);
  }

  async remove(ref: HostRef): Promise<HostView> {
    this.checkRef(ref);
    // Re-adopted first, so the delete deprovisions and removes its node instead of forgetting it.
    await this.readoptIfEnded(ref);
    try {
      await this.bounded(() => this.handle(ref).executeUpdate(deleteHostUpdate));
    } catch (err) {
      throw this.translate(err);
    }
    // Once the delete is done its secrets go too (a read or create after it also removes them,
    // should this process not live that long). Checked by short describes on a backoff, not a
    // long poll per delete: a delete held by a pause or a detach may wait for weeks.
    this.deletes.add(ref);
    return this.handle(ref).query(hostViewQuery);
  }

  /**
   * Running hosts, and hosts whose workflow ended abnormally (with `workflowEnded`): those
   * still exist. Visibility keeps every closed run, so an ended run counts only while it
   * is its host's newest one.
   */
  async list(filter: { namespace?: string; state?: ProvisioningState }): Promise<HostListItem[]> {
    const selection = { namespace: filter.namespace, states: filter.state ? [filter.state] : undefined };
    const clauses = hostListClauses(selection);
    const ended = ['Running', 'Completed', 'ContinuedAsNew'].map((s) => `ExecutionStatus != '${s}'`);
    const items = new Map<string, HostListItem>();
    for await (const { workflowId, item } of runningHosts(this.deps.client, selection)) items.set(workflowId, item);
    for await (const wf of this.deps.client.workflow.list({ query: [...clauses, ...ended].join(' AND ') })) {
      if (items.has(wf.workflowId)) continue;
      const newest = await this.deps.client.workflow.getHandle(wf.workflowId).describe();
      if (newest.runId !== wf.runId) continue;
      items.set(wf.workflowId, { ...hostListItem(wf.searchAttributes), workflowEnded: wf.status.name });
    }
    return [...items.values()].sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`));
  }

  private bounded<T>(call: () => Promise<T>): Promise<T> {
    return this.deps.client.withDeadline(Date.now() + (this.deps.updateTimeoutMs ?? DEFAULT_UPDATE_TIMEOUT_MS), call);
  }

  private handle(ref: HostRef) {
    return this.deps.client.workflow.getHandle(hostWorkflowId(ref));
  }

  /** A host exists while its workflow runs or ended abnormally; only a completed run is a deleted host. */
  private exists<R extends HostRun>(ref: HostRef, run: R): Exclude<R, { kind: 'absent' | 'deleted' }> {
    if (run.kind === 'absent' || run.kind === 'deleted') throw new ApiError(404, 'NotFound', `host ${ref.namespace}/${ref.name} does not exist`);
    return run as Exclude<R, { kind: 'absent' | 'deleted' }>;
  }

  private async lastView(ref: HostRef): Promise<HostView> {
    try {
      return await this.bounded(() => lastHostView(this.deps.client, ref));
    } catch (err) {
      throw busyError(err) ?? new ApiError(503, 'Unavailable', `the workflow of host ${ref.namespace}/${ref.name} ended and its last state cannot be read now (is a worker running?)`, [], 5);
    }
  }

  private ended(run: Extract<HostRun, { kind: 'ended' }>): EndedHostView['workflowEnded'] {
    return {
      status: run.status,
      closedAt: run.closedAt?.toISOString(),
      message: `the host workflow ended abnormally (${run.status}); this is its last known state. Any change, or POST .../adopt, re-adopts it`,
    };
  }

  /**
   * Re-adopts a host whose workflow ended abnormally (its last status, spec, power-off
   * requests and pending delete) and returns what it had; throws 404 for a host that
   * does not exist, unless the caller may create it. `spec`: the one to re-adopt with instead of the last.
   * `known`: the run as the caller read it (a create: under the host's lease, absent or deleted), not read again.
   */
  private async readoptIfEnded(
    ref: HostRef,
    opts: { mustExist: boolean; spec?: HostSpec; labels?: Record<string, string> } = { mustExist: true },
    known?: HostRun,
  ): Promise<HostView | undefined> {
    const run = known ?? (await hostRun(this.deps.client, ref));
    if (opts.mustExist) this.exists(ref, run);
    if (run.kind !== 'ended') return undefined;
    const last = await this.lastView(ref);
    await this.bounded(() =>
      readoptHost(this.deps.client, {
        ref,
        taskQueue: this.deps.taskQueue,
        options: this.deps.hostOptions,
        status: last.status,
        spec: opts.spec ?? last.spec,
        labels: opts.labels ?? last.labels,
        holds: last.power.holds,
        deleteRequested: last.deleteRequested,
        uid: last.uid,
      }),
    );
    this.log(`host ${ref.namespace}/${ref.name}: ${readoptMessage(run, last.status, 'its last state')}`);
    return last;
  }

  private translate(err: unknown): unknown {
    if (err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure) {
      const cause = err.cause;
      if (cause.type === 'InvalidSpec') {
        const fields = (cause.details?.[0] as FieldError[] | undefined) ?? [];
        return new ApiError(400, 'InvalidSpec', cause.message, fields);
      }
      if (cause.type === 'InvalidRequest') {
        const fields = (cause.details?.[0] as FieldError[] | undefined) ?? [];
        return new ApiError(400, 'InvalidRequest', cause.message, fields);
      }
      if (cause.type === 'Conflict') return new ApiError(409, 'Conflict', cause.message);
      if (cause.type === 'NotFound') return new ApiError(404, 'NotFound', cause.message);
    }
    return busyError(err) ?? err;
  }
}
