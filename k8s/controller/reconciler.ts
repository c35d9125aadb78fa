/**
 * Reconciles one BareMetalHost: finalizer on first sight, the desired spec to
 * the host's workflow (update-with-start, idempotent), deletion handed to the
 * workflow with the finalizer removed only once the workflow says the host is
 * gone. Invalid specs and annotations are reported on the object and change
 * nothing else. No durable state lives here: everything is re-derived from
 * the object and the workflow.
 */
import { WithStartWorkflowOperation, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { formatFieldErrors, type FieldError } from '../../types/field-error';
import { emptyStatus, type HostRef, type HostSpec, type HostStatus } from '../../types/host';
import { hostWorkflowId } from '../../types/host-ref';
import { validateHostSpec } from '../../types/validate';
import {
  applySpecUpdate,
  deleteHostUpdate,
  hostViewQuery,
  powerRequestsUpdate,
  type ApplySpecResult,
  type HostWorkflowOptions,
} from '../../workflows/definitions';
import type { PowerRequestChange, PowerRequestsView } from '../../workflows/power-requests';
import type { hostWorkflow } from '../../workflows/host';
import { KubeError, type KubeRest } from '../../activities/kubernetes/kube-rest';
import { recordHostEvent } from '../../activities/kubernetes/events';
import { ANNOTATIONS, annotationSpecErrors, parseAnnotations, type HostAnnotations } from './annotations';
import type { KubeObject } from './informer';

export const FINALIZER = 'baremetalhost.metal3.io';
/** All namespaces, or one (METALFLOW_WATCH_NAMESPACE) for a namespaced install. */
export const bmhPath = (namespace?: string): string =>
  namespace ? `/apis/metal3.io/v1alpha1/namespaces/${namespace}/baremetalhosts` : '/apis/metal3.io/v1alpha1/baremetalhosts';
const MERGE = 'application/merge-patch+json';

export interface BareMetalHost extends KubeObject {
  spec?: unknown;
  status?: Partial<HostStatus>;
}

export interface ReconcilerDeps {
  rest: KubeRest;
  client: Client;
  taskQueue: string;
  hostOptions?: Partial<HostWorkflowOptions>;
  get: (key: string) => BareMetalHost | undefined;
  requeueAfter: (key: string, ms: number) => void;
  log?: (message: string) => void;
}

export class Reconciler {
  /** What was last handed to each workflow; only saves repeat updates, so losing it is harmless. */
  private readonly applied = new Map<string, string>();
  /** Reboot/power-off requests last handed to each workflow (same caveat). */
  private readonly powerApplied = new Map<string, string>();

  constructor(private readonly deps: ReconcilerDeps) {}

  private objectPath(ref: HostRef): string {
    return `/apis/metal3.io/v1alpha1/namespaces/${ref.namespace}/baremetalhosts/${ref.name}`;
  }

  private async workflowRunning(ref: HostRef): Promise<boolean> {
    try {
      const d = await this.deps.client.workflow.getHandle(hostWorkflowId(ref)).describe();
      return d.status.name === 'RUNNING';
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return false;
      throw err;
    }
  }

  async reconcile(key: string): Promise<void> {
    const obj = this.deps.get(key);
    if (!obj) {
      this.applied.delete(key);
      this.powerApplied.delete(key);
      return;
    }
    const ref: HostRef = { namespace: obj.metadata.namespace ?? 'default', name: obj.metadata.name };
    const finalizers = obj.metadata.finalizers ?? [];

    if (obj.metadata.deletionTimestamp) {
      if (!finalizers.includes(FINALIZER)) return;
      if (await this.workflowRunning(ref)) {
        await this.deps.client.workflow.getHandle(hostWorkflowId(ref)).executeUpdate(deleteHostUpdate);
        this.deps.requeueAfter(key, 1000);
        return;
      }
      // Owner references alone would need a garbage collector, which not every cluster (or test) runs.
      await this.deps.rest
        .call('DELETE', `/apis/metal3.io/v1alpha1/namespaces/${ref.namespace}/hardwaredata/${ref.name}`)
        .catch((err: unknown) => {
          if (!(err instanceof KubeError && err.status === 404)) throw err;
        });
      await this.deps.rest.call('PATCH', this.objectPath(ref), {
        body: { metadata: { finalizers: finalizers.filter((f) => f !== FINALIZER), resourceVersion: obj.metadata.resourceVersion } },
        contentType: MERGE,
      });
      this.applied.delete(key);
      return;
    }

    if (!finalizers.includes(FINALIZER)) {
      // The resulting watch event brings the host back with its finalizer.
      await this.deps.rest.call('PATCH', this.objectPath(ref), {
        body: { metadata: { finalizers: [...finalizers, FINALIZER], resourceVersion: obj.metadata.resourceVersion } },
        contentType: MERGE,
      });
      return;
    }

    const annotations = parseAnnotations(obj.metadata.annotations);
    if (annotations.errors.length > 0) {
      await this.reportInvalid(obj, ref, 'InvalidAnnotation', annotations.errors);
      return;
    }
    if (annotations.value.paused) return;

    const valid = validateHostSpec(ref, obj.spec);
    if (!valid.ok) {
      await this.reportInvalid(obj, ref, 'InvalidSpec', valid.errors);
      return;
    }
    const crossErrors = annotationSpecErrors(annotations.value, valid.value.spec);
    if (crossErrors.length > 0) {
      await this.reportInvalid(obj, ref, 'InvalidAnnotation', crossErrors);
      return;
    }
    const fingerprint = JSON.stringify(valid.value.spec);
    let fresh: PowerRequestsView | undefined;
    if (this.applied.get(key) !== fingerprint) {
      fresh = (await this.apply(ref, valid.value.spec)).view.power;
      this.applied.set(key, fingerprint);
    }
    await this.syncPowerRequests(obj, ref, key, annotations.value, fresh);
  }

  /**
   * Hands the reboot annotations to the workflow (level-triggered: the full set each time
   * it changes) and, as Metal3 does, removes the one-shot `reboot.metal3.io` once the
   * workflow says its reboot has run, so it is served exactly once.
   */
  private async syncPowerRequests(
    obj: BareMetalHost,
    ref: HostRef,
    key: string,
    a: HostAnnotations,
    /** The workflow's requests as the spec update just returned them, saving a query. */
    fresh: PowerRequestsView | undefined,
  ): Promise<void> {
    const change: PowerRequestChange = { rebootAnnotation: a.reboot ?? null, holdOff: a.powerOff, onlyThese: true };
    const print = JSON.stringify(change);
    const handle = this.deps.client.workflow.getHandle(hostWorkflowId(ref));
    const known = this.powerApplied.get(key);
    const current = async (): Promise<PowerRequestsView> => fresh ?? (await handle.query(hostViewQuery)).power;
    let power: PowerRequestsView;
    if (known === print) {
      if (!a.reboot) return;
      // Only the one-shot's progress can have moved: a query adds nothing to the history.
      power = await current();
    } else if (known === undefined && !a.reboot && Object.keys(a.powerOff).length === 0) {
      // First sight without reboot annotations: update only if the workflow holds requests
      // from annotations removed while no controller was watching.
      power = await current();
      if (power && (power.annotation !== undefined || Object.keys(power.holds ?? {}).length > 0)) {
        power = await handle.executeUpdate(powerRequestsUpdate, { args: [change] });
      }
      this.powerApplied.set(key, print);
    } else {
      power = await handle.executeUpdate(powerRequestsUpdate, { args: [change] });
      this.powerApplied.set(key, print);
    }
    if (a.reboot && power.annotation === 'done') {
      await this.deps.rest.call('PATCH', this.objectPath(ref), {
        body: { metadata: { annotations: { [ANNOTATIONS.reboot]: null }, resourceVersion: obj.metadata.resourceVersion } },
        contentType: MERGE,
      });
      this.deps.log?.(`${ref.namespace}/${ref.name}: reboot done, removed ${ANNOTATIONS.reboot}`);
    } else if (a.reboot) {
      // The status write that ends the reboot brings the host back; this is the safety net.
      this.deps.requeueAfter(key, 5000);
    }
  }

  private async apply(ref: HostRef, spec: HostSpec): Promise<ApplySpecResult> {
    const startWorkflowOperation = new WithStartWorkflowOperation<typeof hostWorkflow>('hostWorkflow', {
      workflowId: hostWorkflowId(ref),
      taskQueue: this.deps.taskQueue,
      args: [{ ref, options: { ...this.deps.hostOptions, publishStatus: true } }],
      workflowIdConflictPolicy: 'USE_EXISTING',
    });
    // A Conflict (a change the running operation depends on) throws: the queue retries with backoff.
    return this.deps.client.workflow.executeUpdateWithStart(applySpecUpdate, { args: [spec], startWorkflowOperation });
  }

  /** Puts the problem on the object (status and an Event) once; nothing else about the host changes. */
  private async reportInvalid(obj: BareMetalHost, ref: HostRef, reason: string, errors: FieldError[]): Promise<void> {
    const message = formatFieldErrors(errors);
    if (obj.status?.operationalStatus === 'error' && obj.status.errorMessage === message) return;
    this.deps.log?.(`${ref.namespace}/${ref.name}: ${message}`);
    // The CRD requires a whole status: start from an empty one when the host has none yet.
    const status = obj.status?.provisioning ? {} : emptyStatus();
    await this.deps.rest.call('PATCH', `${this.objectPath(ref)}/status`, {
      body: { status: { ...status, operationalStatus: 'error', errorMessage: message } },
      contentType: MERGE,
    });
    await recordHostEvent(this.deps.rest, { ...ref, uid: obj.metadata.uid }, { type: 'Warning', reason, message }, 'metalflow-controller');
  }
}
