/**
 * The fleet-operation routes. They touch hosts in several namespaces, so the
 * guard passes them on (api/auth/actions.ts, SCOPED_BY_HANDLER) and each
 * handler checks the caller's role in every namespace the operation may
 * touch (its scope: the selector's namespace, its hosts', or `*`).
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { FleetInputSchema, fleetScope, type FleetInput } from '../model/fleet';
import type { FleetService } from './fleet-service';
import { allows, type Action } from './auth/roles';
import { registerRunControlRoutes, requireScope } from './run-routes';
import { PauseBodySchema } from './schemas';
import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT, type FleetProgressPageRequest } from '../contracts/fleet-progress-page';
import { FLEET_HOST_OUTCOMES, type FleetHostOutcome } from '../contracts/fleet';

const FleetCancelBodySchema = Type.Object(
  {
    ...PauseBodySchema.properties,
    abortInFlight: Type.Optional(Type.Boolean({ description: 'Stop the hosts in flight too: each is paused, which cancels its running operation (never a failure)' })),
  },
  { additionalProperties: false, 'x-optional': true },
);

/** GET …/{name}?offset=&limit=&outcome=: one page of the hosts (contracts/fleet-progress-page.ts). */
const FleetPageQuerySchema = Type.Object(
  {
    offset: Type.Optional(Type.String({ pattern: '^(0|[1-9][0-9]{0,8})$', description: 'Index of the first host of the page (among those with `outcome`, when given)' })),
    limit: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,3}$', description: `Hosts in the page, 1 to ${MAX_PAGE_LIMIT} (default ${DEFAULT_PAGE_LIMIT}; more is read as ${MAX_PAGE_LIMIT})` })),
    outcome: Type.Optional(Type.Union(FLEET_HOST_OUTCOMES.map((o) => Type.Literal(o)), { description: 'Only the hosts with this outcome' })),
  },
  { additionalProperties: false },
);

const fleetPage = (q: Record<string, string>): FleetProgressPageRequest => ({
  ...(q.offset !== undefined ? { offset: Number(q.offset) } : {}),
  ...(q.limit !== undefined ? { limit: Number(q.limit) } : {}),
  ...(q.outcome !== undefined ? { outcome: q.outcome as FleetHostOutcome } : {}),
});

/** Deleting hosts, or cleaning them (a clean may erase disks, as POST …/clean needs admin), is an admin's; every other fleet operation an operator's. */
const actionOf = (input: FleetInput): Action => (input.operation.kind === 'delete' || input.operation.kind === 'clean' ? 'admin' : 'operate');

export function registerFleetRoutes(base: FastifyInstance, fleets: FleetService): void {
  const app = base.withTypeProvider<TypeBoxTypeProvider>();
  app.post(
    '/v1/fleet-operations',
    {
      schema: {
        summary: 'Start a fleet operation: one operation over the selected hosts, through their host workflows (workflow fleet/<name>)',
        // Checked by validateFleetInput (server.ts), so each field error names its field.
        body: { ...FleetInputSchema, 'x-validator': 'fleet-input' },
      },
    },
    async (req, reply) => {
      const input = req.body as FleetInput;
      requireScope(req, actionOf(input), fleetScope(input));
      const { created, progress } = await fleets.create(input);
      return reply.status(created ? 201 : 200).send(progress);
    },
  );

  app.get('/v1/fleet-operations', { schema: { summary: 'List fleet operations the caller may view (name, operation, phase, counts)' } }, async (req) => ({
    items: (await fleets.list()).filter((f) => f.scope.every((ns) => req.principal !== undefined && allows(req.principal, 'view', ns))),
  }));

  registerRunControlRoutes(base, '/v1/fleet-operations', fleets, {
    noun: 'fleet operation',
    progress: "A fleet operation's progress: phase, counts per outcome, every host's result and failure",
    pause: 'Pause: start no new host; hosts in flight finish',
    resume: 'Resume a paused fleet operation',
    cancel: 'Cancel: start no new host; hosts in flight finish, or with abortInFlight are paused (their running operation cancelled); a powerOff operation releases its power-off requests. Never counted as a failure',
    cancelBody: FleetCancelBodySchema,
  }, { schema: FleetPageQuerySchema, parse: fleetPage });
}
