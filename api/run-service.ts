/**
 * What the HTTP API does for a durable run over many hosts (a fleet
 * operation, a pivot), in Temporal terms: start its workflow, query its
 * progress, send its pause / resume / cancel updates. The scope (namespaces
 * it may touch) goes into the workflow's memo so permissions are checked
 * without reading its input. Each kind of run gives its workflow, id,
 * definitions and wording.
 */
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure, type QueryDefinition, type UpdateDefinition } from '@temporalio/common';
import type { FieldError, Result } from '../model/field-error';
import type { FleetControlRequest } from '../contracts/fleet';
import { ApiError, busyError } from './host-service';

export interface RunKind<I extends { name: string }, P extends { input: I }> {
  /** How messages name it: "fleet operation", "pivot". */
  noun: string;
  workflowType: string;
  workflowId(name: string): string;
  validate(body: unknown): Result<I>;
  scope(input: I): string[];
  /** The workflow's arguments (its input, and tuning). */
  args(input: I): unknown[];
  /** What a run that has not answered its first query yet reports. */
  starting(input: I): P;
  /** Its progress query; a run kind whose query takes a page request (fleets) gets it as the one argument. */
  progress: QueryDefinition<P, [unknown?]>;
  pause: UpdateDefinition<P, [FleetControlRequest]>;
  resume: UpdateDefinition<P, []>;
  cancel: UpdateDefinition<P, [FleetControlRequest]>;
}

export interface RunServiceDeps {
  client: Client;
  taskQueue: string;
  updateTimeoutMs?: number;
}

export const MEMO_SCOPE = 'scope';

export class RunService<I extends { name: string }, P extends { input: I }> {
  constructor(
    protected readonly deps: RunServiceDeps,
    private readonly kind: RunKind<I, P>,
  ) {}

  private handle(name: string) {
    return this.deps.client.workflow.getHandle(this.kind.workflowId(name));
  }

  private bounded<T>(call: () => Promise<T>): Promise<T> {
    return this.deps.client.withDeadline(Date.now() + (this.deps.updateTimeoutMs ?? 60_000), call);
  }

  /** 400 with every field error, before anything is started. */
  validate(body: unknown): I {
    const valid = this.kind.validate(body);
    if (!valid.ok) throw new ApiError(400, 'InvalidRequest', valid.errors.map((e) => `${e.field}: ${e.reason}`).join('; '), valid.errors);
    return valid.value;
  }

  /** Starts the run; the same input again (a retried POST) is the same run, another is a 409. */
  async create(input: I): Promise<{ created: boolean; progress: P }> {
    try {
      await this.deps.client.workflow.start(this.kind.workflowType, {
        workflowId: this.kind.workflowId(input.name),
        taskQueue: this.deps.taskQueue,
        args: this.kind.args(input),
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        memo: { [MEMO_SCOPE]: this.kind.scope(input) },
      });
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw busyError(err) ?? err;
      const existing = await this.get(input.name);
      if (JSON.stringify(existing.input) === JSON.stringify(input)) return { created: false, progress: existing };
      throw new ApiError(409, 'Conflict', `${this.kind.noun} ${input.name} exists with another input; choose another name`);
    }
    try {
      return { created: true, progress: await this.get(input.name) };
    } catch {
      // Started, but its first progress is not readable yet (a busy worker): the caller reads it with GET.
      return { created: true, progress: this.kind.starting(input) };
    }
  }

  /** `page`: the query's argument, for a kind that pages its progress. */
  async get(name: string, page?: unknown): Promise<P> {
    return this.update(name, () => (page === undefined ? this.handle(name).query(this.kind.progress) : this.handle(name).query(this.kind.progress, page)));
  }

  /** The namespaces the run may touch (from its memo); 404 when there is none by that name. */
  async scope(name: string): Promise<string[]> {
    try {
      const d = await this.handle(name).describe();
      const scope = (await d.memo)?.[MEMO_SCOPE];
      return Array.isArray(scope) && scope.every((s) => typeof s === 'string') ? (scope as string[]) : ['*'];
    } catch (err) {
      throw this.translate(name, err);
    }
  }

  pause(name: string, reason?: string): Promise<P> {
    return this.update(name, () => this.handle(name).executeUpdate(this.kind.pause, { args: [reason ? { reason } : {}] }));
  }

  resume(name: string): Promise<P> {
    return this.update(name, () => this.handle(name).executeUpdate(this.kind.resume));
  }

  cancel(name: string, reason?: string, abortInFlight?: boolean): Promise<P> {
    const req = { ...(reason ? { reason } : {}), ...(abortInFlight ? { abortInFlight } : {}) };
    return this.update(name, () => this.handle(name).executeUpdate(this.kind.cancel, { args: [req] }));
  }

  private async update(name: string, call: () => Promise<P>): Promise<P> {
    try {
      return await this.bounded(call);
    } catch (err) {
      throw this.translate(name, err);
    }
  }

  private translate(name: string, err: unknown): unknown {
    const noun = this.kind.noun;
    // An update to a run that has ended: the server answers "workflow execution already completed" (a not-found).
    if (err instanceof Error && /already completed/i.test(err.message)) return new ApiError(409, 'Conflict', `${noun} ${name} has ended`);
    if (err instanceof WorkflowNotFoundError) return new ApiError(404, 'NotFound', `${noun} ${name} does not exist`);
    if (err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure) {
      const fields = (err.cause.details?.[0] as FieldError[] | undefined) ?? [];
      if (err.cause.type === 'InvalidRequest') return new ApiError(400, 'InvalidRequest', err.cause.message, fields);
      if (err.cause.type === 'Conflict') return new ApiError(409, 'Conflict', err.cause.message);
    }
    return busyError(err) ?? err;
  }
}
