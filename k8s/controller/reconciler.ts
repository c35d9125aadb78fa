/**
 * Reconciles one BareMetalHost: finalizer on first sight, the desired spec to
 * the host's workflow (update-with-start, idempotent), deletion handed to the
 * workflow with the finalizer removed only once the workflow says the host is
 * gone. Invalid specs and annotations are reported on the object and change
 * nothing else. No durable state lives here: everything is re-derived from
 * the object and the workflow.
 */
import type { Client, UpdateDefinition } from '@temporalio/client';
import type { HostRef, HostSpec, HostStatus } from '../../model/host';
import { hostWorkflowId } from '../../model/host-ref';
import { validateHostSpec } from '../../model/validate';
import { SITE_LABEL, siteErrors } from '../../model/site';
import {
  applyDirectivesUpdate,
  applySpecUpdate,
  type ApplySpecResult,
  deleteHostUpdate,
  hostViewQuery,
  requestInspectionUpdate,
  restoreStatusUpdate,
  type HostDirectives,
  type HostWorkflowOptions,
  setPausedUpdate,
  MAX_PAUSE_REASON,
} from '../../contracts/host';
import type { PowerRequestsView } from '../../contracts/power-requests';
import type { BmoGuard } from './bmo-guard';
import { hostRun, hostWorkflowStart, lastHostView, ReadoptRefused, readoptHost, readoptMessage, type HostRun } from '../../control/host-run';
import type { KubeRest } from '../../clients/kubernetes/kube-rest';
import { MERGE } from '../../clients/kubernetes/metal3-objects';
import { recordHostEvent } from '../../clients/kubernetes/events';
import { releaseCompanions } from './bmo-release';
import { moveAnnotations } from './move';
import { ANNOTATIONS, annotationConflicts, parseAnnotations, type HostAnnotations } from './annotations';
import { reportInvalid, warnAnnotationValues, warnIgnored } from './host-reports';
import { specWithSite, type BareMetalHost } from './bare-metal-host';
import { reportSiteLabel, siteLabelRefusal } from './site-label';

export type { BareMetalHost };
import { syncPowerRequests } from './power-annotations';
import { policyOf, syncUpdatePolicy, type HostUpdatePolicyObject } from './update-policies';
import { syncFailCountReset } from './fail-count-reset';

export const FINALIZER = 'baremetalhost.metal3.io';
const DELETE_RECHECK_MAX_MS = 30_000;
const DELETE_HELD_RECHECK_MS = 60_000;
const MAX_ENDS_AWAITED = 256;
const END_POLL_FAILED_RECHECK_MS = 1000;
/** The cluster-wide path (every namespace), or one namespace's (see watchPaths). */
export const bmhPath = (namespace?: string): string =>
  namespace ? `/apis/metal3.io/v1alpha1/namespaces/${namespace}/baremetalhosts` : '/apis/metal3.io/v1alpha1/baremetalhosts';


export interface ReconcilerDeps {
  rest: KubeRest;
  client: Client;
  taskQueue: string;
  hostOptions?: Partial<HostWorkflowOptions>;
  /** Names of the configured sites (METALFLOW_SITES_FILE) besides the default one: the site label must name one. */
  sites?: readonly string[];
  get: (key: string) => BareMetalHost | undefined;
  /** resourceVersion of a Secret as the Secret informer last saw it (metadata only), or undefined. */
  secretVersion?: (namespace: string, name: string) => string | undefined;
  /**
   * Sites that hold their hosts' BMC credentials themselves (`"secrets": "site"`, docs/sites.md): a host
   * labelled with one has no credentials Secret in this cluster, so none is looked up or handed on for it.
   */
  credentialSites?: readonly string[];
  requeueAfter: (key: string, ms: number) => void;
  log?: (message: string) => void;
  /** The HostUpdatePolicy of the host's name, as its informer last saw it (update-policies.ts). */
  updatePolicy?: (key: string) => HostUpdatePolicyObject | undefined;
  /** Signs that Metal3's operator still drives hosts (bmo-guard.ts); absent: not checked (METALFLOW_BMO_CHECK=off). */
  bmoGuard?: BmoGuard;
  /** How long an unpaused host's due block-move is left to the worker before this controller writes it (0: at once). */
  blockMoveGraceMs?: number;
}

/** How long the worker has to set or lift a host's block-move after its status write before the controller does it. */
export const BLOCK_MOVE_GRACE_MS = 5000;

/** How often a host held back while Metal3's operator looks active is looked at again. */
export const BMO_RECHECK_MS = 5000;

export class Reconciler {
  /** What was last handed to each workflow; only saves repeat updates, so losing it is harmless. */
  private readonly applied = new Map<string, string>();
  private readonly sentDirectives = new Map<string, string>();
  /** Reboot/power-off requests last handed to each workflow (same caveat). */
  private readonly powerApplied = new Map<string, string>();
  /** A rebooting host's history mark when its one-shot's progress was last read (same caveat). */
  private readonly rebootLooked = new Map<string, string>();
  /** The pause reason last handed to each workflow ('' for none); same caveat. */
  private readonly pausedApplied = new Map<string, string>();
  /** Annotation values last said to be read as Metal3's default; said again after a restart. */
  private readonly annotationWarned = new Map<string, string>();
  /** The HostUpdatePolicy last handed to each workflow (same caveat). */
  private readonly policyApplied = new Map<string, string>();
  /** The reason a host's status was last refused for re-adoption: its Warning Event is written once per reason. */
  private readonly readoptRefused = new Map<string, string>();
  /** Hosts held back because Metal3's operator looks active: warned once until they are driven again. */
  private readonly bmoHeld = new Set<string>();
  /** A provisioningFailCount edited on the object, last handed over (same caveat as `applied`). */
  private readonly failCountSent = new Map<string, string>();
  /** Hosts whose running workflow has taken the delete; lost on a restart, when one query finds it out again. */
  private readonly deleteSent = new Set<string>();
  /** A deleting host's resourceVersion when last looked at and the wait before the next look. */
  private readonly deleteWait = new Map<string, { version: string; ms: number }>();
  /**
   * Deleting hosts whose workflow's end is awaited (one long poll each): the run's end brings the host back
   * at once. The end itself changes nothing on the object, so no watch event follows it, and the doubling
   * recheck alone left a finalizer up to 30 s after the host was gone from Ironic. Capped: the long polls
   * share the controller's one connection with its updates; past the cap the recheck alone serves.
   */
  private readonly endAwaited = new Set<string>();
  /** An unpaused host's block-move change first seen due, and when: the worker's to write for a grace (blockMoveDue). */
  private readonly blockMoveSeen = new Map<string, { want: string; at: number }>();

  constructor(private readonly deps: ReconcilerDeps) {}

  private objectPath(ref: HostRef): string {
    return `/apis/metal3.io/v1alpha1/namespaces/${ref.namespace}/baremetalhosts/${ref.name}`;
  }

  private forget(key: string): void {
    this.applied.delete(key);
    this.sentDirectives.delete(key);
    this.powerApplied.delete(key);
    this.rebootLooked.delete(key);
    this.pausedApplied.delete(key);
    this.annotationWarned.delete(key);
    this.policyApplied.delete(key);
    this.failCountSent.delete(key);
    this.deleteSent.delete(key);
    this.deleteWait.delete(key);
    this.blockMoveSeen.delete(key);
  }

  /**
   * When to look at a deleting host again, only to see its workflow complete (a describe): the worker's
   * status writes show a delete moving, and each is a watch event that brings the host here at once. So
   * the wait starts at 1 s and doubles up to 30 s while the object stands still. A delete held by the
   * paused annotation or a detached host's "delay" waits for the annotation's removal, itself a watch
   * event: a look a minute is only a safety net.
   */
  private deleteRecheck(key: string, obj: BareMetalHost, held: boolean): number {
    if (held) {
      this.deleteWait.delete(key);
      return DELETE_HELD_RECHECK_MS;
    }
    const version = obj.metadata.resourceVersion ?? '';
    const last = this.deleteWait.get(key);
    const ms = last && last.version === version ? Math.min(last.ms * 2, DELETE_RECHECK_MAX_MS) : 1000;
    this.deleteWait.set(key, { version, ms });
    return ms;
  }

  private awaitEnd(key: string, ref: HostRef): void {
    if (this.endAwaited.has(key) || this.endAwaited.size >= MAX_ENDS_AWAITED) return;
    this.endAwaited.add(key);
    // Any ending only brings the host back: the reconcile decides. A poll that failed (a run that failed, the
    // connection lost) brings it back a second later, so a poll failing at once cannot spin the reconcile.
    void this.deps.client.workflow
      .getHandle(hostWorkflowId(ref))
      .result()
      .then(
        () => 0,
        () => END_POLL_FAILED_RECHECK_MS,
      )
      .then((ms) => {
        this.endAwaited.delete(key);
        this.deps.requeueAfter(key, ms);
      });
  }


  /**
   * The host's workflow ended abnormally (terminated, failed, timed out), or is gone
   * from Temporal (past retention, a new Temporal) while the object's status says the
   * host was registered: the host still exists, and so may its Ironic node.
   */
  private lost(obj: BareMetalHost, run: HostRun): run is Extract<HostRun, { kind: 'ended' | 'absent' }> {
    if (run.kind === 'ended') return true;
    const p = obj.status?.provisioning;
    // A host deleted from Ironic (state deleting, no node) has nothing left to re-adopt.
    // Registering without a node: nothing to re-adopt either (an invalid spec reported before any run shows so).
    return run.kind === 'absent' && p !== undefined && (p.ID !== '' || !['', 'unmanaged', 'deleting', 'registering'].includes(p.state));
  }

  /**
   * A new run takes the last status (the ended run's, else the object's) and
   * re-attaches to the node, a provisioned one adopted as it is. Then the host
   * is reconciled like any other, deletion included.
   */
  private async readopt(obj: BareMetalHost, key: string, ref: HostRef, run: Extract<HostRun, { kind: 'ended' | 'absent' }>): Promise<void> {
    const last =
      run.kind === 'ended'
        ? await lastHostView(this.deps.client, ref).catch((err: unknown) => {
            this.deps.log?.(`${ref.namespace}/${ref.name}: the ended workflow's last state cannot be read (${err instanceof Error ? err.message : String(err)}); using the object's status`);
            return undefined;
          })
        : undefined;
    // A run that ended before it held a status (e.g. ended because its status was refused) tells nothing: the object's status does.
    const lastStatus = last && (last.status.provisioning.state !== '' || last.status.provisioning.ID !== '') ? last.status : undefined;
    const status = lastStatus ?? (obj.status?.provisioning ? (obj.status as HostStatus) : undefined);
    const annotations = parseAnnotations(obj.metadata.annotations);
    const valid = validateHostSpec(ref, specWithSite(obj));
    const spec = valid.ok ? valid.value.spec : last?.spec;
    if (!status) {
      // Neither the ended run (unreadable: e.g. it never ran on a served task queue) nor the object
      // holds a status: nothing was ever published as registered. A new run starts from the spec;
      // its registration finds a node left behind by name, as for any new host.
      if (!spec) throw new Error(`${ref.namespace}/${ref.name}: the host workflow ended, no status is left to re-adopt from and the spec is invalid`);
      await this.withStart(ref, applySpecUpdate, [spec]);
      this.forget(key);
      this.deps.log?.(`${ref.namespace}/${ref.name}: the host workflow ended (${run.kind === 'ended' ? run.status : 'gone'}) with no status to re-adopt from; started again from the spec`);
      return;
    }
    try {
      await readoptHost(this.deps.client, {
        ref,
        taskQueue: this.deps.taskQueue,
        options: this.options(),
        status,
        spec,
        directives: annotations.errors.length === 0 && spec ? this.directives(obj, ref, spec, annotations.value) : undefined,
      });
    } catch (err) {
      // Nothing else may start the host (a spec sent now would register it from scratch): the reconcile fails and is retried.
      if (err instanceof ReadoptRefused && this.readoptRefused.get(key) !== err.reason) {
        this.readoptRefused.set(key, err.reason);
        await recordHostEvent(this.deps.rest, { ...ref, uid: obj.metadata.uid }, { type: 'Warning', reason: 'ReadoptRefused', message: err.message }, 'metalflow-controller');
      }
      throw err;
    }
    this.readoptRefused.delete(key);
    // Everything handed to the ended run is sent to the new one again.
    this.forget(key);
    const message = readoptMessage(run, status, lastStatus ? 'its last state' : "the object's status");
    this.deps.log?.(`${ref.namespace}/${ref.name}: ${message}`);
    await recordHostEvent(this.deps.rest, { ...ref, uid: obj.metadata.uid }, { type: 'Warning', reason: 'WorkflowReadopted', message }, 'metalflow-controller');
  }

  private options() {
    return { ...this.deps.hostOptions, publishStatus: true };
  }

  async reconcile(key: string): Promise<void> {
    let obj = this.deps.get(key);
    if (!obj) {
      this.forget(key);
      return;
    }
    const ref: HostRef = { namespace: obj.metadata.namespace ?? 'default', name: obj.metadata.name };
    const finalizers = obj.metadata.finalizers ?? [];

    // Nothing at all while Metal3's operator may drive the host too (a delete included: BMO would handle it).
    if (await this.heldForBmo(key, obj, ref)) return;

    if (obj.metadata.deletionTimestamp) {
      if (!finalizers.includes(FINALIZER)) return;
      let run = await hostRun(this.deps.client, ref);
      // Only a completed run has deleted the host: any other ending is re-adopted, then deleted properly.
      if (this.lost(obj, run)) {
        await this.readopt(obj, key, ref, run);
        run = { kind: 'running' };
      }
      if (run.kind === 'running') {
        // The detached annotation decides how a host is deleted: the workflow must know it first.
        const annotations = parseAnnotations(obj.metadata.annotations);
        // A paused host is not deleted until unpaused (as in Metal3): the workflow holds the delete.
        await this.syncPaused(key, ref, annotations.value);
        const valid = validateHostSpec(ref, specWithSite(obj));
        if (annotations.errors.length === 0 && valid.ok) await this.sendDirectives(key, ref, this.directives(obj, ref, valid.value.spec, annotations.value));
        if (!this.deleteSent.has(key)) {
          const handle = this.deps.client.workflow.getHandle(hostWorkflowId(ref));
          // Every accepted update is history, and a query on a host not in a worker's cache replays its whole
          // history: the delete is asked once, remembered, and asked again only of a new run (readopt forgets it).
          // A restarted controller queries once, so a delete already taken is not sent twice.
          if (!(await handle.query(hostViewQuery)).deleteRequested) await handle.executeUpdate(deleteHostUpdate);
          this.deleteSent.add(key);
        }
        const held = annotations.value.paused || annotations.value.detached?.deleteAction === 'delay';
        if (!held) this.awaitEnd(key, ref);
        this.deps.requeueAfter(key, this.deleteRecheck(key, obj, held));
        return;
      }
      const released = await releaseCompanions(this.deps.rest, ref, obj.spec);
      if (released.length > 0) this.deps.log?.(`${ref.namespace}/${ref.name}: released Metal3's finalizers on ${released.join(', ')}`);
      await this.deps.rest.call('PATCH', this.objectPath(ref), {
        body: { metadata: { finalizers: finalizers.filter((f) => f !== FINALIZER), resourceVersion: obj.metadata.resourceVersion } },
        contentType: MERGE,
      });
      this.forget(key);
      return;
    }

    if (!finalizers.includes(FINALIZER)) {
      // The host is driven on from the object the write returns, not from the watch event it causes: that event
      // would queue the host behind every other one created with it (100 at once waited a queue's length more
      // for their workflows). The event's reconcile then finds everything handed over already.
      obj = await this.deps.rest.call<BareMetalHost>('PATCH', this.objectPath(ref), {
        body: { metadata: { finalizers: [...finalizers, FINALIZER], resourceVersion: obj.metadata.resourceVersion } },
        contentType: MERGE,
      });
      if (!(obj.metadata.finalizers ?? []).includes(FINALIZER) || obj.metadata.deletionTimestamp) return;
    }

    const annotations = parseAnnotations(obj.metadata.annotations);
    // clusterctl move: block-move while the host is busy, its status in the status annotation while paused for a move.
    const move = moveAnnotations(obj, annotations.value.paused ? (annotations.value.pausedBy ?? '') : undefined);
    if (!move) this.blockMoveSeen.delete(key);
    else if (annotations.value.paused || this.blockMoveDue(key, move)) await this.deps.rest.call('PATCH', this.objectPath(ref), { body: { metadata: { annotations: move } }, contentType: MERGE });
    // One describe serves the pause and what follows (two were made before a host's workflow started).
    let described: Promise<HostRun> | undefined;
    const currentRun = (): Promise<HostRun> => (described ??= hostRun(this.deps.client, ref));
    // Paused: the workflow is told (it cancels what runs and starts nothing), and nothing else is read.
    if (await this.syncPaused(key, ref, annotations.value, currentRun)) return;
    if (annotations.errors.length > 0) {
      await reportInvalid(this.deps, this.objectPath(ref), obj, ref, 'InvalidAnnotation', annotations.errors);
      return;
    }
    await warnAnnotationValues(this.deps, this.annotationWarned, obj, key, ref, annotations.warnings);

    const valid = validateHostSpec(ref, specWithSite(obj));
    const siteErrs = siteErrors(valid.ok ? valid.value.spec.site : undefined, this.deps.sites ?? [], `metadata.labels["${SITE_LABEL}"]`);
    if (!valid.ok || siteErrs.length > 0) {
      await reportInvalid(this.deps, this.objectPath(ref), obj, ref, 'InvalidSpec', [...(valid.ok ? [] : valid.errors), ...siteErrs]);
      return;
    }
    const spec = valid.value.spec;
    const conflicts = annotationConflicts(spec, annotations.value);
    if (conflicts.length > 0) {
      await reportInvalid(this.deps, this.objectPath(ref), obj, ref, 'InvalidAnnotation', conflicts);
      return;
    }
    const consumed: string[] = [];

    const run = await currentRun();
    const lost = this.lost(obj, run);
    if (lost) await this.readopt(obj, key, ref, run);

    // Before anything registers the host: a status to restore (new cluster, pivot).
    const restore = annotations.value.restoreStatus;
    if (restore) {
      const st = obj.status?.provisioning;
      if (!st || (st.state === '' && st.ID === '')) {
        const result = await this.withStart(ref, restoreStatusUpdate, [restore]);
        this.deps.log?.(`${ref.namespace}/${ref.name}: status annotation ${result.restored ? 'restored' : `not applied: ${result.reason}`}`);
      }
      // Applied, or moot because the host has a status: either way the annotation is done (as in Metal3).
      consumed.push(ANNOTATIONS.status);
    }

    const directives = this.directives(obj, ref, spec, annotations.value);
    const fingerprint = JSON.stringify(spec);
    const specDue = this.applied.get(key) !== fingerprint;
    const taken = await this.sendDirectives(key, ref, directives, specDue ? spec : undefined);
    if (directives.hardwareDetails) consumed.push(ANNOTATIONS.hardwareDetails);

    let fresh: PowerRequestsView | undefined;
    if (specDue) {
      // A Conflict (a change the running operation depends on) throws: the queue retries with backoff.
      // A refused site label is said on the object too (site-label.ts): the host moves once it can.
      fresh = (
        taken ??
        (await this.withStart(ref, applySpecUpdate, [spec]).catch(async (err: unknown) => {
          const refusal = siteLabelRefusal(err);
          if (refusal) await reportSiteLabel(this.deps, this.objectPath(ref), obj, ref, refusal);
          throw err;
        }))
      ).power;
      this.applied.set(key, fingerprint);
      // A run this reconcile started holds no update policy: nothing to ask it (a query is a workflow task).
      if (run.kind === 'absent' && !lost && !this.policyApplied.has(key)) this.policyApplied.set(key, JSON.stringify(null));
      await warnIgnored(this.deps.rest, obj, ref, spec);
    }
    // Taken (now or before): a refusal said on the object is cleared (nothing is written when none was said).
    await reportSiteLabel(this.deps, this.objectPath(ref), obj, ref, undefined);
    await syncPowerRequests(this.deps, this.powerApplied, this.rebootLooked, this.objectPath(ref), obj, ref, key, annotations.value, fresh);
    await syncFailCountReset(this.deps.client, ref, obj, this.failCountSent, key, this.deps.log);
    if (this.deps.updatePolicy) await syncUpdatePolicy(this.deps.client, ref, policyOf(this.deps.updatePolicy(key), this.deps.log), this.policyApplied);

    if (annotations.value.inspect === 'requested') {
      await this.deps.client.workflow.getHandle(hostWorkflowId(ref)).executeUpdate(requestInspectionUpdate);
      consumed.push(ANNOTATIONS.inspect);
    }
    if (consumed.length > 0) await this.removeAnnotations(ref, consumed);
  }

  private async heldForBmo(key: string, obj: BareMetalHost, ref: HostRef): Promise<boolean> {
    const reason = await this.deps.bmoGuard?.refuse(obj.metadata.managedFields);
    if (!reason) {
      if (this.bmoHeld.delete(key)) this.deps.log?.(`${key}: Metal3's operator no longer looks active; driving the host`);
      return false;
    }
    if (!this.bmoHeld.has(key)) {
      this.bmoHeld.add(key);
      const message = `not driven while Metal3's operator is active: ${reason}. Stop it first (scale its Deployment to 0), or set METALFLOW_BMO_CHECK=off if it no longer drives these hosts`;
      this.deps.log?.(`${key}: ${message}`);
      await recordHostEvent(this.deps.rest, { ...ref, uid: obj.metadata.uid }, { type: 'Warning', reason: 'BareMetalOperatorActive', message }, 'metalflow-controller');
    }
    this.deps.requeueAfter(key, BMO_RECHECK_MS);
    return true;
  }

  /**
   * Hands `baremetalhost.metal3.io/paused` to a running workflow (level-triggered, once per change);
   * true when the host is paused. A paused host without a workflow is not started, as Metal3 does nothing with it.
   */
  private async syncPaused(key: string, ref: HostRef, a: HostAnnotations, currentRun?: () => Promise<HostRun>): Promise<boolean> {
    const want = a.paused ? (a.pausedBy ?? `the ${ANNOTATIONS.paused} annotation`).slice(0, MAX_PAUSE_REASON) : '';
    const known = this.pausedApplied.get(key);
    if (known === want) return a.paused;
    if ((await (currentRun ?? (() => hostRun(this.deps.client, ref)))()).kind === 'running') {
      const handle = this.deps.client.workflow.getHandle(hostWorkflowId(ref));
      // What this controller last handed the run is what the run holds (a readopted run is forgotten): a change
      // goes at once. Only a host not seen since the controller started is asked first (an update that changes
      // nothing would still be history). The pause is what a pivot's freeze sends, to a host running local
      // activities: a query meeting one is the replay fault of docs/adr/0006-local-activity-heartbeat.md.
      const held = known ?? (await handle.query(hostViewQuery)).paused?.reason ?? '';
      if (held !== want) {
        await handle.executeUpdate(setPausedUpdate, { args: [a.paused ? { paused: true, reason: want } : { paused: false }] });
        this.deps.log?.(`${ref.namespace}/${ref.name}: ${a.paused ? `paused (${want})` : 'unpaused'}`);
      }
    }
    this.pausedApplied.set(key, want);
    return a.paused;
  }

  /** What the workflow needs from the object besides its spec; references and versions only. */
  private directives(obj: BareMetalHost, ref: HostRef, spec: HostSpec, a: HostAnnotations): HostDirectives {
    // The config drive's meta_data.uuid, as Metal3 writes it.
    const d: HostDirectives = obj.metadata.uid ? { uid: obj.metadata.uid } : {};
    if (a.detached) d.detached = a.detached;
    if (a.inspect === 'disabled') d.inspectionDisabled = true;
    if (a.hardwareDetails) d.hardwareDetails = a.hardwareDetails;
    // A site that holds the credentials: a Secret of the same name here is not the host's (the site worker reads its own).
    const atSite = (this.deps.credentialSites ?? []).includes(obj.metadata.labels?.[SITE_LABEL] ?? '');
    const secret = atSite ? undefined : spec.bmc?.credentialsName;
    const version = secret ? this.deps.secretVersion?.(ref.namespace, secret) : undefined;
    if (secret && version) d.credentials = { name: secret, namespace: ref.namespace, version };
    return d;
  }

  /**
   * Hands the directives over when they changed; with `spec` (due as well) both go in one update, one workflow task
   * where a new host took two, and the spec's answer is returned. Refused (the spec invalid or in conflict: the
   * directives were not taken either) or answered by a worker that predates it (no `spec`), the directives go
   * alone and nothing is returned: the caller sends the spec on its own, as before.
   */
  private async sendDirectives(key: string, ref: HostRef, d: HostDirectives, spec?: HostSpec): Promise<ApplySpecResult | undefined> {
    const fingerprint = JSON.stringify(d);
    if (this.sentDirectives.get(key) === fingerprint) return undefined;
    const both = spec ? await this.withStart(ref, applyDirectivesUpdate, [d, spec]).catch(() => undefined) : undefined;
    if (!both) await this.withStart(ref, applyDirectivesUpdate, [d]);
    this.sentDirectives.set(key, fingerprint);
    return both?.spec;
  }

  /**
   * Whether an unpaused host's block-move, out of step with its status, is for this controller to write now. The
   * worker writes it right after the status write that makes it due (activities/kubernetes/host-status.ts), so
   * the watch event of that status write mostly finds it not written yet: it is looked at again after a grace, and
   * written then if still out of step (a worker that could not write it, or one that predates it).
   */
  private blockMoveDue(key: string, change: Record<string, string | null>): boolean {
    const grace = this.deps.blockMoveGraceMs ?? BLOCK_MOVE_GRACE_MS;
    if (grace <= 0) return true;
    const want = JSON.stringify(change);
    const now = Date.now();
    const seen = this.blockMoveSeen.get(key);
    if (seen?.want === want && now - seen.at >= grace) {
      this.blockMoveSeen.delete(key);
      return true;
    }
    const since = seen?.want === want ? seen.at : now;
    if (since === now) this.blockMoveSeen.set(key, { want, at: now });
    this.deps.requeueAfter(key, grace - (now - since));
    return false;
  }

  /** Update-with-start of the host's workflow: idempotent, starts it when it does not run. */
  private async withStart<R, A extends unknown[]>(ref: HostRef, update: UpdateDefinition<R, A>, args: A): Promise<R> {
    const startWorkflowOperation = hostWorkflowStart(ref, this.deps.taskQueue, this.options());
    return this.deps.client.workflow.executeUpdateWithStart(update, { args, startWorkflowOperation });
  }

  /** Metal3 removes the one-shot annotations once acted on; a merge patch with null removes a key. */
  private async removeAnnotations(ref: HostRef, keys: string[]): Promise<void> {
    await this.deps.rest.call('PATCH', this.objectPath(ref), {
      body: { metadata: { annotations: Object.fromEntries(keys.map((k) => [k, null])) } },
      contentType: MERGE,
    });
  }
}
