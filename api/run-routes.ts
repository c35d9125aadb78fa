/**
 * Routes every durable run over hosts has (fleet operations, pivots): its
 * progress, and pause / resume / cancel. They touch hosts in several
 * namespaces, so the guard passes them on (api/auth/actions.ts,
 * SCOPED_BY_HANDLER) and each handler checks the caller's role in every
 * namespace the run may touch (its scope, from the workflow's memo).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type, type TObject } from '@sinclair/typebox';
import { ApiError } from './host-service';
import type { RunService } from './run-service';
import { allows, roleFor, type Action } from './auth/roles';
import { PauseBodySchema } from './schemas';

export function requireScope(req: FastifyRequest, action: Action, scope: string[]): void {
  const who = req.principal;
  const denied = scope.filter((ns) => !who || !allows(who, action, ns));
  if (denied.length > 0) {
    throw new ApiError(403, 'Forbidden', `${who?.subject ?? 'anonymous'} may not ${req.method} ${req.routeOptions.url ?? ''} in namespace ${denied.join(', ')}: it needs role ${roleFor(action)} there`);
  }
}

/** GET `<prefix>/:name` and POST `<prefix>/:name/pause|resume|cancel`. */
export function registerRunControlRoutes<I extends { name: string }, P extends { input: I }>(
  base: FastifyInstance,
  prefix: string,
  runs: RunService<I, P>,
  text: { noun: string; progress: string; pause: string; resume: string; cancel: string; cancelBody: TObject },
  /** A run kind whose progress comes in pages: the GET's query string, read by `parse` into the progress query's argument when not empty. */
  pageQuery?: { schema: TObject; parse: (query: Record<string, string>) => unknown },
): void {
  const app = base.withTypeProvider<TypeBoxTypeProvider>();
  const params = Type.Object({ name: Type.String({ maxLength: 63, description: `The ${text.noun}` }) });
  app.get(`${prefix}/:name`, { schema: { summary: text.progress, params, ...(pageQuery ? { querystring: pageQuery.schema } : {}) } }, async (req) => {
    requireScope(req, 'view', await runs.scope(req.params.name));
    const query = (req.query ?? {}) as Record<string, string>;
    return runs.get(req.params.name, pageQuery && Object.keys(query).length > 0 ? pageQuery.parse(query) : undefined);
  });
  const control = (verb: 'pause' | 'resume' | 'cancel') =>
    app.post(
      `${prefix}/:name/${verb}`,
      { schema: { summary: text[verb], params, ...(verb === 'resume' ? {} : { body: verb === 'cancel' ? text.cancelBody : PauseBodySchema }) } },
      async (req) => {
        const { name } = req.params;
        requireScope(req, 'operate', await runs.scope(name));
        const { reason, abortInFlight } = (req.body as { reason?: string; abortInFlight?: boolean } | undefined) ?? {};
        if (verb === 'pause') return runs.pause(name, reason);
        if (verb === 'cancel') return runs.cancel(name, reason, abortInFlight);
        return runs.resume(name);
      },
    );
  control('pause');
  control('resume');
  control('cancel');
}
