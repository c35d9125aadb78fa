/**
 * What the HTTP API does for a fleet operation, in Temporal terms: start its
 * workflow (`fleet/<name>`), query its progress, send its pause / resume /
 * cancel updates, and list fleet workflows through visibility. The scope
 * (namespaces it may touch) goes into the workflow's memo so permissions are
 * checked without reading its input.
 */
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { FieldError } from '../types/field-error';
import { fleetScope, validateFleetInput, type FleetInput } from '../types/fleet';
import { SEARCH_ATTRIBUTES } from '../types/search-attributes';
import {
  cancelFleetUpdate,
  fleetProgressQuery,
  fleetWorkflowId,
  pauseFleetUpdate,
  resumeFleetUpdate,
  type FleetOptions,
  type FleetProgress,
} from '../workflows/fleet-definitions';
import type { fleetWorkflow } from '../workflows/fleet';
import { countOutcomes } from '../workflows/fleet-plan';
import { ApiError, busyError } from './host-service';

export interface FleetServiceDeps {
  client: Client;
  taskQueue: string;
  /** Fleet workflow tuning (tests shorten the poll window). */
  fleetOptions?: Partial<FleetOptions>;
  updateTimeoutMs?: number;
}

export interface FleetListItem {
  name: string;
  operation: string;
  phase: string;
  succeeded: number;
  failed: number;
  status: string;
  scope: string[];
}

const MEMO_SCOPE = 'scope';

/** What a fleet operation that has not run its first step yet reports. */
function startingProgress(input: FleetInput): FleetProgress {
  return { name: input.name, input, phase: 'selecting', counts: countOutcomes([]), selected: 0, limits: { maxConcurrent: 0, maxFailures: 0 }, hosts: [], failures: [], runs: 0 };
}

export class FleetService {
  constructor(private readonly deps: FleetServiceDeps) {}

  private handle(name: string) {
    return this.deps.client.workflow.getHandle<typeof fleetWorkflow>(fleetWorkflowId(name));
  }

  private bounded<T>(call: () => Promise<T>): Promise<T> {
    return this.deps.client.withDeadline(Date.now() + (this.deps.updateTimeoutMs ?? 60_000), call);
  }

  /** 400 with every field error, before anything is started. */
  validate(body: unknown): FleetInput {
    const valid = validateFleetInput(body);
    if (!valid.ok) throw new ApiError(400, 'InvalidRequest', valid.errors.map((e) => `${e.field}: ${e.reason}`).join('; '), valid.errors);
    return valid.value;
  }

  /** Starts the fleet operation; the same input again (a retried POST) is the same operation, another is a 409. */
  async create(input: FleetInput): Promise<{ created: boolean; progress: FleetProgress }> {
    try {
      await this.deps.client.workflow.start<typeof fleetWorkflow>('fleetWorkflow', {
        workflowId: fleetWorkflowId(input.name),
        taskQueue: this.deps.taskQueue,
        args: [input, { options: this.deps.fleetOptions }],
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        memo: { [MEMO_SCOPE]: fleetScope(input) },
      });
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw busyError(err) ?? err;
      const existing = await this.get(input.name);
      if (JSON.stringify(existing.input) === JSON.stringify(input)) return { created: false, progress: existing };
      throw new ApiError(409, 'Conflict', `fleet operation ${input.name} exists with another input; choose another name`);
    }
    try {
      return { created: true, progress: await this.get(input.name) };
    } catch {
      // Started, but its first progress is not readable yet (a busy worker): the caller reads it with GET.
      return { created: true, progress: startingProgress(input) };
    }
  }

  async get(name: string): Promise<FleetProgress> {
    try {
      return await this.bounded(() => this.handle(name).query(fleetProgressQuery));
    } catch (err) {
      throw this.translate(name, err);
    }
  }

  /** The namespaces the operation may touch (from its memo); 404 when there is none by that name. */
  async scope(name: string): Promise<string[]> {
    try {
      const d = await this.handle(name).describe();
      const scope = (await d.memo)?.[MEMO_SCOPE];
      return Array.isArray(scope) && scope.every((s) => typeof s === 'string') ? (scope as string[]) : ['*'];
    } catch (err) {
      throw this.translate(name, err);
    }
  }

  pause(name: string, reason?: string): Promise<FleetProgress> {
    return this.update(name, () => this.handle(name).executeUpdate(pauseFleetUpdate, { args: [reason ? { reason } : {}] }));
  }

  resume(name: string): Promise<FleetProgress> {
    return this.update(name, () => this.handle(name).executeUpdate(resumeFleetUpdate));
  }

  cancel(name: string, reason?: string, abortInFlight?: boolean): Promise<FleetProgress> {
    const req = { ...(reason ? { reason } : {}), ...(abortInFlight ? { abortInFlight } : {}) };
    return this.update(name, () => this.handle(name).executeUpdate(cancelFleetUpdate, { args: [req] }));
  }

  async list(): Promise<FleetListItem[]> {
    const items: FleetListItem[] = [];
    for await (const wf of this.deps.client.workflow.list({ query: `WorkflowType = 'fleetWorkflow'` })) {
      const attr = (key: { name: string }): unknown => (wf.searchAttributes?.[key.name] as unknown[] | undefined)?.[0];
      const scope = wf.memo?.[MEMO_SCOPE];
      items.push({
        name: wf.workflowId.replace(/^fleet\//, ''),
        operation: String(attr(SEARCH_ATTRIBUTES.fleetOperation) ?? ''),
        phase: String(attr(SEARCH_ATTRIBUTES.fleetPhase) ?? ''),
        succeeded: Number(attr(SEARCH_ATTRIBUTES.fleetSucceeded) ?? 0),
        failed: Number(attr(SEARCH_ATTRIBUTES.fleetFailed) ?? 0),
        status: wf.status.name,
        scope: Array.isArray(scope) ? (scope as string[]) : ['*'],
      });
    }
    return items.sort((a, b) => a.name.localeCompare(b.name));
  }

  private async update(name: string, call: () => Promise<FleetProgress>): Promise<FleetProgress> {
    try {
      return await this.bounded(call);
    } catch (err) {
      throw this.translate(name, err);
    }
  }

  private translate(name: string, err: unknown): unknown {
    // An update to a run that has ended: the server answers "workflow execution already completed" (a not-found).
    if (err instanceof Error && /already completed/i.test(err.message)) return new ApiError(409, 'Conflict', `fleet operation ${name} has ended`);
    if (err instanceof WorkflowNotFoundError) return new ApiError(404, 'NotFound', `fleet operation ${name} does not exist`);
    if (err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure) {
      const fields = (err.cause.details?.[0] as FieldError[] | undefined) ?? [];
      if (err.cause.type === 'InvalidRequest') return new ApiError(400, 'InvalidRequest', err.cause.message, fields);
      if (err.cause.type === 'Conflict') return new ApiError(409, 'Conflict', err.cause.message);
    }
    return busyError(err) ?? err;
  }
}
