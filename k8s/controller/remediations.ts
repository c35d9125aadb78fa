/**
 * HostRemediation objects (metalflow.io) start remediation workflows: one
 * per object, id `remediation/<ns>/<host>/<object uid>`, started once
 * (a re-list or a second controller finds it started and changes nothing).
 * Deleting the object cancels a remediation still running (its power-off
 * request is released; not a failure). The workflow writes the status.
 */
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { WorkflowIdReusePolicy } from '@temporalio/common';
import type { KubeRest } from '../../clients/kubernetes/kube-rest';
import { hostRemediationsPath, patchHostRemediationStatus } from '../../clients/kubernetes/host-remediations';
import type { HostRemediationSpec, HostRemediationStatus } from '../../model/host-remediation';
import { remediationWorkflowId, type RemediationInput } from '../../contracts/remediation';
import { Informer, watchPaths, type KubeObject } from './informer';
import { WorkQueue } from './work-queue';

export interface HostRemediationObject extends KubeObject {
  spec: HostRemediationSpec;
  status?: HostRemediationStatus;
}

export interface RemediationControllerDeps {
  rest: KubeRest;
  client: Client;
  taskQueue: string;
  /** The watched namespaces; every namespace when unset (METALFLOW_WATCH_NAMESPACE). */
  namespaces?: readonly string[];
  log: (message: string) => void;
  /** Told of every change (the health check counts remediations running; CAPM3's status follows). */
  onChange?: (key: string) => void;
}

export class RemediationController {
  private readonly queue: WorkQueue;
  private readonly informer: Informer<HostRemediationObject>;
  /** Workflows of the objects seen, so a deletion can cancel its remediation. */
  private readonly workflows = new Map<string, string>();

  constructor(private readonly deps: RemediationControllerDeps) {
    this.queue = new WorkQueue((key) => this.reconcile(key), { maxQueued: 10_000, concurrency: 4, baseBackoffMs: 500, maxBackoffMs: 30_000 });
    this.informer = new Informer<HostRemediationObject>(deps.rest, watchPaths(deps.namespaces, hostRemediationsPath), (key) => {
      this.queue.add(key);
      // One ending or deleted may let a queued one of its host start.
      for (const [k, o] of this.informer.cache) if (k !== key && o.status?.outcome === 'queued') this.queue.add(k);
      deps.onChange?.(key);
    }, { log: deps.log });
  }

  start(): Promise<void> {
    return this.informer.start();
  }

  get(key: string): HostRemediationObject | undefined {
    return this.informer.cache.get(key);
  }

  /** The HostRemediations as last seen. */
  objects(): Iterable<HostRemediationObject> {
    return this.informer.cache.values();
  }

  stop(): void {
    this.informer.stop();
    this.queue.stop();
  }

  private async reconcile(key: string): Promise<void> {
    const obj = this.informer.cache.get(key);
    if (!obj || obj.metadata.deletionTimestamp) {
      const workflowId = this.workflows.get(key);
      if (workflowId) await this.cancel(key, workflowId);
      return;
    }
    const { namespace = '', name, uid = '' } = obj.metadata;
    const ref = { namespace, name: obj.spec.hostName };
    const workflowId = remediationWorkflowId(ref, uid);
    this.workflows.set(key, workflowId);
    if (!remediationActive(obj)) return;
    const first = firstOfHost(obj, this.informer.cache.values());
    if (first !== obj) {
      const message = `waiting: HostRemediation ${first.metadata.name} of host ${ref.name} runs first (one remediation of a host at a time)`;
      if (obj.status?.outcome !== 'queued' || obj.status.message !== message) {
        await patchHostRemediationStatus(this.deps.rest, namespace, name, { outcome: 'queued', message });
        this.deps.log(`${key}: ${message}`);
      }
      return;
    }
    if (obj.status?.outcome === 'queued') {
      await patchHostRemediationStatus(this.deps.rest, namespace, name, { outcome: 'running', message: 'started: no other remediation of the host runs now' });
    }
    const { hostName: _host, ...request } = obj.spec;
    const input: RemediationInput = { ref, uid, request, kubernetes: true, resource: { name } };
    try {
      await this.deps.client.workflow.start('remediateWorkflow', {
        taskQueue: this.deps.taskQueue,
        workflowId,
        args: [input],
        // One object, one remediation: an ended one is never started again.
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      });
      this.deps.log(`${key}: remediation of ${namespace}/${ref.name} started (${workflowId})`);
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
  }

  private async cancel(key: string, workflowId: string): Promise<void> {
    try {
      const handle = this.deps.client.workflow.getHandle(workflowId);
      if ((await handle.describe()).status.name === 'RUNNING') {
        await handle.cancel();
        this.deps.log(`${key}: HostRemediation deleted; remediation ${workflowId} cancelled`);
      }
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
    }
    this.workflows.delete(key);
  }
}

const ENDED = new Set(['succeeded', 'failed', 'refused', 'cancelled']);

/** Not ended and not being deleted: running, queued, or not started yet. */
export const remediationActive = (r: HostRemediationObject): boolean => !r.metadata.deletionTimestamp && !ENDED.has(r.status?.outcome ?? '');

/**
 * The one active remediation of `obj`'s host that may run: one already started
 * (a workflow id in its status) first, else the oldest (creation time, then name).
 * Every replica and every restart picks the same one from the same objects.
 */
export function firstOfHost(obj: HostRemediationObject, all: Iterable<HostRemediationObject>): HostRemediationObject {
  const before = (a: HostRemediationObject, b: HostRemediationObject): boolean => {
    const started = Number(!a.status?.workflowId) - Number(!b.status?.workflowId);
    if (started !== 0) return started < 0;
    const created = (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '');
    return created !== 0 ? created < 0 : a.metadata.name < b.metadata.name;
  };
  let first = obj;
  for (const r of all) {
    if (r.metadata.namespace === obj.metadata.namespace && r.spec.hostName === obj.spec.hostName && remediationActive(r) && before(r, first)) first = r;
  }
  return first;
}
