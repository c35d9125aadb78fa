/**
 * What the HTTP API does for a fleet operation, in Temporal terms: start its
 * workflow (`fleet/<name>`), query its progress, send its pause / resume /
 * cancel updates, and list fleet workflows through visibility. The scope
 * (namespaces it may touch) goes into the workflow's memo so permissions are
 * checked without reading its input.
 */
import { fleetScope, fleetSiteErrors, validateFleetInput, type FleetInput } from '../model/fleet';
import { formatFieldErrors } from '../model/field-error';
import { SEARCH_ATTRIBUTES } from '../model/search-attributes';
import {
  cancelFleetUpdate,
  fleetProgressQuery,
  fleetWorkflowId,
  pauseFleetUpdate,
  resumeFleetUpdate,
  type FleetOptions,
  type FleetProgress,
} from '../contracts/fleet';
import { countOutcomes } from '../contracts/fleet-plan';
import { MEMO_SCOPE, RunService, type RunServiceDeps } from './run-service';
import { ApiError } from './api-error';

export interface FleetServiceDeps extends RunServiceDeps {
  /** Fleet workflow tuning (tests shorten the poll window). */
  fleetOptions?: Partial<FleetOptions>;
  /** Names of the configured sites (METALFLOW_SITES_FILE) besides the default one: what `selector.sites` may name. */
  sites?: readonly string[];
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

/** What a fleet operation that has not run its first step yet reports. */
function startingProgress(input: FleetInput): FleetProgress {
  return { name: input.name, input, phase: 'selecting', counts: countOutcomes([]), selected: 0, limits: { maxConcurrent: 0, maxFailures: 0 }, hosts: [], failures: [], runs: 0 };
}

export class FleetService extends RunService<FleetInput, FleetProgress> {
  private readonly sites: readonly string[];

  constructor(deps: FleetServiceDeps) {
    super(deps, {
      noun: 'fleet operation',
      workflowType: 'fleetWorkflow',
      workflowId: fleetWorkflowId,
      validate: validateFleetInput,
      scope: fleetScope,
      args: (input) => [input, { options: deps.fleetOptions }],
      starting: startingProgress,
      progress: fleetProgressQuery,
      pause: pauseFleetUpdate,
      resume: resumeFleetUpdate,
      cancel: cancelFleetUpdate,
    });
    this.sites = deps.sites ?? [];
  }

  /** A site that is not configured is a 400 naming it and the accepted ones, before anything starts. */
  override async create(input: FleetInput): Promise<{ created: boolean; progress: FleetProgress }> {
    const errors = fleetSiteErrors(input.selector, this.sites, input.operation);
    if (errors.length > 0) throw new ApiError(400, 'InvalidRequest', formatFieldErrors(errors), errors);
    return super.create(input);
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
}
