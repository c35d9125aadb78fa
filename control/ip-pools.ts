/**
 * The IP pool workflows, from the API and the Kubernetes controller: apply a
 * pool's spec (update-with-start), allocate and release by claim, read and
 * delete a pool. Failures come back typed (IpamError.type: the workflow's
 * failure types, NotFound for a pool that does not exist). Allocation and
 * release are idempotent by claim, so a call whose answer was lost (the
 * update aborted by a continue-as-new or a server under load, a deadline)
 * is sent again here until the overall deadline.
 */
import { WithStartWorkflowOperation, WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { FieldError } from '../model/field-error';
import type { Allocation, IPPoolSpec, PoolRef } from '../model/ipam';
import { objectNameErrors } from '../model/ipam-validate';
import {
  allocateUpdate,
  applyPoolUpdate,
  claimQuery,
  deletePoolUpdate,
  IPPOOL_WORKFLOW_TYPE,
  ipPoolWorkflowId,
  poolViewQuery,
  releaseUpdate,
  type AllocateOutcome,
  type AllocateRequest,
  type ClaimAllocation,
  type PoolInput,
  type PoolView,
} from '../contracts/ippool';
import type { IpPoolWorkflow } from '../contracts/ippool';
import { Batcher } from '../clients/temporal/batcher';

export type { ClaimAllocation };

export type IpamErrorType = 'NotFound' | 'Conflict' | 'InvalidRequest' | 'PoolExhausted' | 'PreAllocationOutOfBounds' | 'AddressUnavailable';
const TYPES = new Set<string>(['NotFound', 'Conflict', 'InvalidRequest', 'PoolExhausted', 'PreAllocationOutOfBounds', 'AddressUnavailable']);

export class IpamError extends Error {
  constructor(
    readonly type: IpamErrorType,
    message: string,
    readonly fields: FieldError[] = [],
  ) {
    super(message);
  }
}


export interface IpPoolsOptions {
  client: Client;
  taskQueue: string;
  /** How long one call may take in all, retries included (60 s). */
  timeoutMs?: number;
  /** The pool workflow's continue-as-new threshold (tests lower it). */
  maxHistoryEvents?: number;
}

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const refOf = (key: string): PoolRef => {
  const [namespace = '', name = ''] = key.split('/');
  return { namespace, name };
};

export class IpPools {
  private readonly allocations: Batcher<AllocateRequest, AllocateOutcome>;
  private readonly releases: Batcher<string, Allocation | null>;

  constructor(private readonly opts: IpPoolsOptions) {
    this.allocations = new Batcher((key, requests) =>
      this.call(refOf(key), true, () => this.handle(refOf(key)).executeUpdate(allocateUpdate, { args: [requests] })),
    );
    this.releases = new Batcher((key, claims) => this.call(refOf(key), true, () => this.handle(refOf(key)).executeUpdate(releaseUpdate, { args: [{ claims }] })));
  }

  private handle(ref: PoolRef) {
    return this.opts.client.workflow.getHandle<IpPoolWorkflow>(ipPoolWorkflowId(ref));
  }

  private input(ref: PoolRef): PoolInput {
    return { ref, ...(this.opts.maxHistoryEvents !== undefined ? { maxHistoryEvents: this.opts.maxHistoryEvents } : {}) };
  }

  /** Typed failures pass through; anything else (an aborted update, a busy server) is sent again while time is left when `retry`. */
  private async call<T>(ref: PoolRef, retry: boolean, fn: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + (this.opts.timeoutMs ?? 60_000);
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.opts.client.withDeadline(deadline, fn);
      } catch (err) {
        const typed = this.typed(ref, err);
        if (typed) throw typed;
        // A pool that continued as new answers on its next run; one that stays ended was deleted.
        if (err instanceof Error && /already completed/i.test(err.message) && attempt >= 2) {
          throw new IpamError('NotFound', `IP pool ${ref.namespace}/${ref.name} does not exist (deleted)`);
        }
        if (!retry || Date.now() + 200 >= deadline) throw err;
        await pause(Math.min(2000, 100 * 2 ** attempt));
      }
    }
  }

  private typed(ref: PoolRef, err: unknown): IpamError | undefined {
    const pool = `${ref.namespace}/${ref.name}`;
    if (err instanceof WorkflowNotFoundError) return new IpamError('NotFound', `IP pool ${pool} does not exist`);
    if (err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure && TYPES.has(err.cause.type ?? '')) {
      return new IpamError(err.cause.type as IpamErrorType, err.cause.message, (err.cause.details?.[0] as FieldError[] | undefined) ?? []);
    }
    return undefined;
  }

  /** Creates the pool (its workflow) or replaces its spec; `created` when no pool of that name was running. */
  async apply(ref: PoolRef, spec: IPPoolSpec): Promise<{ created: boolean; view: PoolView }> {
    const existed = await this.handle(ref)
      .describe()
      .then((d) => d.status.name === 'RUNNING')
      .catch(() => false);
    const view = await this.call(ref, true, () =>
      this.opts.client.workflow.executeUpdateWithStart(applyPoolUpdate, {
        args: [spec],
        startWorkflowOperation: new WithStartWorkflowOperation<IpPoolWorkflow>(IPPOOL_WORKFLOW_TYPE, {
          workflowId: ipPoolWorkflowId(ref),
          taskQueue: this.opts.taskQueue,
          args: [this.input(ref)],
          workflowIdConflictPolicy: 'USE_EXISTING',
        }),
      }),
    );
    return { created: !existed, view };
  }

  async view(ref: PoolRef): Promise<PoolView> {
    const d = await this.call(ref, false, () => this.handle(ref).describe());
    if (d.status.name !== 'RUNNING') throw new IpamError('NotFound', `IP pool ${ref.namespace}/${ref.name} does not exist (deleted)`);
    return this.call(ref, true, () => this.handle(ref).query(poolViewQuery));
  }

  /** The claim's recorded allocation; null when it holds none. */
  async claim(ref: PoolRef, claim: string): Promise<ClaimAllocation | null> {
    await this.view(ref);
    return this.call(ref, true, () => this.handle(ref).query(claimQuery, claim));
  }

  /** Pools with a running workflow, optionally in one namespace (Temporal's visibility: a new pool may take a moment to be listed). */
  async list(namespace?: string): Promise<PoolRef[]> {
    const refs: PoolRef[] = [];
    for await (const wf of this.opts.client.workflow.list({ query: `WorkflowType = '${IPPOOL_WORKFLOW_TYPE}' AND ExecutionStatus = 'Running'` })) {
      const [, ns = '', name = ''] = wf.workflowId.split('/');
      if (namespace === undefined || ns === namespace) refs.push({ namespace: ns, name });
    }
    return refs.sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`));
  }

  /** The claim's address (the same one every time it is asked). */
  async allocate(ref: PoolRef, req: AllocateRequest): Promise<ClaimAllocation> {
    const bad = objectNameErrors('claim', req.claim, 'IPClaim');
    if (bad.length > 0) throw new IpamError('InvalidRequest', bad[0]!.reason, bad);
    const outcome = await this.allocations.submit(`${ref.namespace}/${ref.name}`, req);
    if (!outcome.ok) throw new IpamError(outcome.type as IpamErrorType, outcome.message);
    return outcome.allocation;
  }

  /** Gives the claim's address back; null when it held none. */
  release(ref: PoolRef, claim: string): Promise<Allocation | null> {
    return this.releases.submit(`${ref.namespace}/${ref.name}`, claim);
  }

  /** Ends the pool; a Conflict while any claim holds an address. */
  remove(ref: PoolRef): Promise<PoolView> {
    return this.call(ref, true, () => this.handle(ref).executeUpdate(deletePoolUpdate));
  }
}
