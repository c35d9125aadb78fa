/**
 * The fleet-operation routes. They touch hosts in several namespaces, so the
 * guard passes them on (api/auth/actions.ts, SCOPED_BY_HANDLER) and each
 * handler checks the caller's role in every namespace the operation may
 * touch (its scope: the selector's namespace, its hosts', or `*`).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { FleetInputSchema, fleetScope, type FleetInput } from '../types/fleet';
import { ApiError } from './host-service';
import type { FleetService } from './fleet-service';
import { allows, roleFor, type Action } from './auth/roles';
import { PauseBodySchema } from './schemas';

const FleetCancelBodySchema = Type.Object(
  {
    ...PauseBodySchema.properties,
    abortInFlight: Type.Optional(Type.Boolean({ description: 'Stop the hosts in flight too: each is paused, which cancels its running operation (never a failure)' })),
  },
  { additionalProperties: false, 'x-optional': true },
);

const FleetParamsSchema = Type.Object({ name: Type.String({ maxLength: 63, description: 'The fleet operation' }) });

function requireScope(req: FastifyRequest, action: Action, scope: string[]): void {
  const who = req.principal;
  const denied = scope.filter((ns) => !who || !allows(who, action, ns));
  if (denied.length > 0) {
    throw new ApiError(403, 'Forbidden', `${who?.subject ?? 'anonymous'} may not ${req.method} ${req.routeOptions.url ?? ''} in namespace ${denied.join(', ')}: it needs role ${roleFor(action)} there`);
  }
}

/** Deleting hosts is an admin's; every other fleet operation an operator's. */
const actionOf = (input: FleetInput): Action => (input.operation.kind === 'delete' ? 'admin' : 'operate');

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

  app.get(
    '/v1/fleet-operations/:name',
    { schema: { summary: 'A fleet operation\'s progress: phase, counts per outcome, every host\'s result and failure', params: FleetParamsSchema } },
    async (req) => {
      requireScope(req, 'view', await fleets.scope(req.params.name));
      return fleets.get(req.params.name);
    },
  );

  const control = (verb: 'pause' | 'resume' | 'cancel', summary: string) =>
    app.post(
      `/v1/fleet-operations/:name/${verb}`,
      { schema: { summary, params: FleetParamsSchema, ...(verb === 'resume' ? {} : { body: verb === 'cancel' ? FleetCancelBodySchema : PauseBodySchema }) } },
      async (req) => {
        const { name } = req.params;
        requireScope(req, 'operate', await fleets.scope(name));
        const { reason, abortInFlight } = (req.body as { reason?: string; abortInFlight?: boolean } | undefined) ?? {};
        if (verb === 'pause') return fleets.pause(name, reason);
        if (verb === 'cancel') return fleets.cancel(name, reason, abortInFlight);
        return fleets.resume(name);
      },
    );
  control('pause', 'Pause: start no new host; hosts in flight finish');
  control('resume', 'Resume a paused fleet operation');
  control('cancel', 'Cancel: start no new host; hosts in flight finish, or with abortInFlight are paused (their running operation cancelled); a powerOff operation releases its power-off requests. Never counted as a failure');
}
