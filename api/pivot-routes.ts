/**
 * The pivot routes: `POST /v1/pivots` starts a pivot (workflow `pivot/<name>`),
 * then its progress and pause / resume / cancel as for fleet operations
 * (api/run-routes.ts). A pivot removes hosts from this cluster: admin in
 * every namespace it may touch.
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { PivotInputSchema, pivotScope, validatePivotInput, type PivotInput } from '../model/pivot';
import { countOutcomes } from '../contracts/fleet-plan';
import { cancelPivotUpdate, pausePivotUpdate, pivotProgressQuery, pivotWorkflowId, resumePivotUpdate, type PivotProgress } from '../contracts/pivot';
import { RunService, type RunServiceDeps } from './run-service';
import { registerRunControlRoutes, requireScope } from './run-routes';
import { PauseBodySchema } from './schemas';
import { ApiError } from './api-error';
import type { FieldError } from '../model/field-error';
import type { PivotPlaneRegistry } from '../config/pivot-planes';

/**
 * The plane ids a pivot names, against the planes the operator registered: an unknown id, or one
 * side an API plane and the other a Kubernetes plane, is a 400 before anything starts.
 */
export function planeErrors(registry: PivotPlaneRegistry, input: PivotInput): FieldError[] {
  const errors: FieldError[] = [];
  const known = [...registry.planes.keys()].join(', ') || 'none';
  const kinds: Array<'api' | 'kube'> = [];
  for (const side of ['source', 'target'] as const) {
    const id = input[side].plane;
    if (id === undefined) {
      kinds.push('kube');
      continue;
    }
    const plane = registry.planes.get(id);
    if (!plane) errors.push({ field: `${side}.plane`, reason: `no plane "${id}" is registered (registered: ${known}; the operator registers planes in METALFLOW_PIVOT_PLANES)` });
    else kinds.push(plane.api ? 'api' : 'kube');
  }
  if (errors.length === 0 && kinds[0] !== kinds[1]) errors.push({ field: 'target.plane', reason: 'source and target must both be metalflow API planes or both Kubernetes planes' });
  return errors;
}

export function pivotService(deps: RunServiceDeps): RunService<PivotInput, PivotProgress> {
  return new RunService<PivotInput, PivotProgress>(deps, {
    noun: 'pivot',
    workflowType: 'pivotWorkflow',
    workflowId: pivotWorkflowId,
    validate: validatePivotInput,
    scope: pivotScope,
    args: (input) => [input],
    starting: (input) => ({ name: input.name, input, phase: 'selecting', counts: countOutcomes([]), selected: 0, limits: { maxConcurrent: 0, maxFailures: 0 }, hosts: [], failures: [], runs: 0 }),
    progress: pivotProgressQuery,
    pause: pausePivotUpdate,
    resume: resumePivotUpdate,
    cancel: cancelPivotUpdate,
  });
}

/** `planes`: the API's own copy of the registry, to refuse unknown ids at once (the worker checks them again). */
export function registerPivotRoutes(base: FastifyInstance, pivots: RunService<PivotInput, PivotProgress>, planes?: PivotPlaneRegistry): void {
  const app = base.withTypeProvider<TypeBoxTypeProvider>();
  app.post(
    '/v1/pivots',
    {
      schema: {
        summary: 'Start a pivot: move the selected BareMetalHosts to another management plane without reprovisioning (workflow pivot/<name>)',
        body: { ...PivotInputSchema, 'x-validator': 'pivot-input' },
      },
    },
    async (req, reply) => {
      const input = req.body as PivotInput;
      requireScope(req, 'admin', pivotScope(input));
      const errors = planes ? planeErrors(planes, input) : [];
      if (errors.length > 0) throw new ApiError(400, 'InvalidRequest', errors.map((e) => `${e.field}: ${e.reason}`).join('; '), errors);
      const { created, progress } = await pivots.create(input);
      return reply.status(created ? 201 : 200).send(progress);
    },
  );
  registerRunControlRoutes(base, '/v1/pivots', pivots, {
    noun: 'pivot',
    progress: "A pivot's progress: phase, counts per outcome, each host's step, result, reason or error (and whether it was rolled back)",
    pause: 'Pause: start no new host; hosts in flight finish their move',
    resume: 'Resume a paused pivot',
    cancel: 'Cancel: start no new host; hosts in flight finish their move. Never counted as a failure',
    cancelBody: PauseBodySchema,
  });
}
