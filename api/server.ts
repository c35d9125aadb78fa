/**
 * The HTTP API: hosts and their images, validated with the host model's
 * schemas, documented as OpenAPI at /openapi.json. Errors are JSON
 * `{ error, message, fields: [{ field, reason }] }`.
 */
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyError } from 'fastify';
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { TSchema } from '@sinclair/typebox';
import { schemaErrors } from '../model/validate';
import type { FieldError, Result } from '../model/field-error';
import { validateFleetInput } from '../model/fleet';
import { validateCleanRequest, type CleanRequest } from '../model/clean';
import { FleetService } from './fleet-service';
import { registerHostActionRoutes } from './host-action-routes';
import { registerFleetRoutes } from './fleet-routes';
import { pivotService, registerPivotRoutes } from './pivot-routes';
import { validatePivotInput } from '../model/pivot';
import { registerRemediationRoutes } from './remediation-routes';
import { registerIpamRoutes } from './ipam-routes';
import { registerFirmwareRoutes } from './firmware-routes';
import { registerUpdatePolicyRoutes } from './update-policy-routes';
import { registerFleetPage, type FleetPageSettings } from './fleet-page';
import { traceRequests } from './request-tracing';
import type { Tracing } from '../clients/telemetry/tracing';
import { registerSiteRoutes } from './site-routes';
import type { SiteHealthReader } from '../control/site-health';
import { IpPools } from '../control/ip-pools';
import { validateRemediationRequest } from '../model/remediation';
import { ApiError, busyError, type HostService } from './host-service';
import { grpcStatus } from './temporal-errors';
import { CleanBodySchema, DetachBodySchema, RaidBodySchema, HostInputSchema, HostParamsSchema, ImageBodySchema, ListQuerySchema, PauseBodySchema, PowerOffParamsSchema, RebootBodySchema, RebootHeadersSchema } from './schemas';
import { canView, installGuard } from './auth/guard';
import type { AuthOptions } from './auth/options';
import type { HostSpec } from '../model/host';
import type { PivotPlaneRegistry } from '../config/pivot-planes';
import { answers, ACCEPTED } from './route-answers';

class RequestValidationError extends Error {
  readonly statusCode = 400;
  constructor(readonly fields: FieldError[]) {
    super(fields.map((f) => `${f.field}: ${f.reason}`).join('; '));
  }
}

const PART_PREFIX: Record<string, string> = { body: '', params: 'path', querystring: 'query', headers: 'header' };

const CUSTOM_VALIDATORS: Record<string, (data: unknown) => Result<unknown>> = {
  'fleet-input': validateFleetInput,
  'pivot-input': validatePivotInput,
  'remediation-input': validateRemediationRequest,
  'clean-request': validateCleanRequest,
};

/** The largest request body: the inline user data (512 KiB) and the rest of a spec, JSON-escaped, fit. */
export const API_BODY_LIMIT_BYTES = 1024 * 1024;

/** Fastify's body-parser refusals, said as a field error on `body`. */
const BODY_ERRORS: Record<string, string> = {
  FST_ERR_CTP_BODY_TOO_LARGE: `is larger than the ${API_BODY_LIMIT_BYTES} bytes (1 MiB) the API accepts`,
  FST_ERR_CTP_INVALID_JSON_BODY: 'is not valid JSON (or sets __proto__ or constructor.prototype, which is refused)',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'is empty; send {} when there is nothing to say',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'does not match its Content-Length',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'must be application/json',
};

/** Where the API logs: off, to stdout, or (tests) to a stream of JSON lines. */
export type ApiLogger = boolean | { level?: string; stream: { write(line: string): void } };

export async function buildServer(
  hosts: HostService,
  opts: { logger?: ApiLogger; auth: AuthOptions; fleets?: FleetService; ipPools?: IpPools; pivotPlanes?: PivotPlaneRegistry; page?: FleetPageSettings; tracing?: Tracing; sites?: SiteHealthReader },
): Promise<FastifyInstance> {
  // Fastify logs method and URL only, never bodies (they carry BMC passwords and user data).
  const logger = opts.logger ?? false;
  const tls = opts.auth.tls;
  // With a CA, a client certificate is asked for but not required: token callers connect without one.
  // Host names are Kubernetes names, up to 253 characters (Fastify's default cut is 100: a longer one was a 404);
  // up to 1024 reach the route, whose schema names path.name when too long.
  // A request id a caller cannot choose (no request-id header is trusted) and cannot guess from the previous one:
  // a 500 names it, and only the log holds the detail under it.
  const limits = { routerOptions: { maxParamLength: 1024 }, bodyLimit: API_BODY_LIMIT_BYTES, genReqId: () => randomUUID() };
  const base = tls
    ? (Fastify({ logger, ...limits, https: { key: tls.key, cert: tls.cert, ca: tls.ca, requestCert: tls.ca !== undefined, rejectUnauthorized: false } }) as unknown as FastifyInstance)
    : Fastify({ logger, ...limits });
  const app = base.withTypeProvider<TypeBoxTypeProvider>();
  // First, so a request the guard refuses has its span too.
  if (opts.tracing) traceRequests(app as unknown as FastifyInstance, opts.tracing);
  installGuard(app, opts.auth);

  // The same TypeBox checks the workflow runs, so messages name the field the same way everywhere.
  app.setValidatorCompiler(({ schema, httpPart }) => (data: unknown) => {
    // A body the route marks optional (x-optional) may be left out entirely.
    if ((data === undefined || data === null) && httpPart === 'body' && (schema as { 'x-optional'?: boolean })['x-optional']) return { value: data };
    const part = httpPart ?? 'body';
    // A schema that names its own validator: one whose union a generic check would report vaguely.
    const own = CUSTOM_VALIDATORS[(schema as { 'x-validator'?: string })['x-validator'] ?? ''];
    if (own) {
      const result = own(data);
      return result.ok ? { value: result.value } : { error: new RequestValidationError(result.errors) };
    }
    // A whole part of the wrong kind (e.g. a body that is a list) is named as that part.
    const errors = schemaErrors(schema as TSchema, data, PART_PREFIX[part] ?? '').map((e) => (e.field === '(root)' ? { ...e, field: part } : e));
    return errors.length > 0 ? { error: new RequestValidationError(errors) } : { value: data };
  });

  app.setErrorHandler((thrown: FastifyError | ApiError | RequestValidationError, req, reply) => {
    // Reads (describe, query, list) reach Temporal too; a busy or unreachable server is a 503 there as well.
    const err = busyError(thrown) ?? thrown;
    if (err instanceof ApiError) {
      if (err.retryAfterSeconds !== undefined) {
        app.log.warn({ err: { message: err.message } }, 'temporal busy; asked the caller to retry');
        void reply.header('retry-after', String(err.retryAfterSeconds));
      }
      return reply.status(err.status).send({ error: err.type, message: err.message, fields: err.fields });
    }
    if (err instanceof RequestValidationError) {
      return reply.status(400).send({ error: 'InvalidRequest', message: err.message, fields: err.fields });
    }
    const bodyReason = 'code' in err && typeof err.code === 'string' ? BODY_ERRORS[err.code] : undefined;
    if (bodyReason && 'statusCode' in err && typeof err.statusCode === 'number') {
      const error = err.statusCode === 413 ? 'PayloadTooLarge' : err.statusCode === 415 ? 'UnsupportedMediaType' : 'InvalidRequest';
      return reply.status(err.statusCode).send({ error, message: `body: ${bodyReason}`, fields: [{ field: 'body', reason: bodyReason }] });
    }
    const status = 'statusCode' in err && typeof err.statusCode === 'number' ? err.statusCode : 500;
    if (status >= 500) {
      // An unexpected error's text may name files, addresses or a peer's answer: the log keeps it under the
      // request id, the caller gets the id. The gRPC status under a Temporal error says which failure it was.
      req.log.error({ err: { message: err.message, name: err.name, stack: err.stack, grpc: grpcStatus(err) } }, 'request failed');
      void reply.header('x-request-id', req.id);
      return reply.status(status).send({ error: 'Internal', message: `internal error; the API's log has the detail under request id ${req.id}`, requestId: req.id, fields: [] });
    }
    return reply.status(status).send({ error: 'BadRequest', message: err.message, fields: [] });
  });

  // Unknown routes (and methods a route does not have) answer in the API's own error shape, not Fastify's.
  app.setNotFoundHandler((req, reply) => {
    const path = (req.url.split('?')[0] ?? '').slice(0, 256);
    return reply.status(404).send({ error: 'NotFound', message: `no route ${req.method} ${path}; the API's routes are listed in /openapi.json`, fields: [] });
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'metalflow',
        version: '0.1.0',
        description:
          'Bare-metal hosts (Metal3 BareMetalHost spec) whose lifecycle runs as Temporal workflows. Secret values are write-only. ' +
          'Every /v1 call needs a bearer token (or a mapped client certificate): 401 Unauthorized without a known one, ' +
          '403 Forbidden when its role (viewer, operator, admin per namespace) may not do it there, 415 UnsupportedMediaType ' +
          'for a PUT or POST without content-type application/json.',
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
  });

  registerHostActionRoutes(app, hosts);
  registerFleetRoutes(app, opts.fleets ?? new FleetService({ client: hosts.client, taskQueue: hosts.taskQueue, sites: hosts.sites }));
  registerPivotRoutes(app, pivotService({ client: hosts.client, taskQueue: hosts.taskQueue }), opts.pivotPlanes);
  registerRemediationRoutes(app, hosts);
  registerFirmwareRoutes(app, hosts);
  registerUpdatePolicyRoutes(app, hosts);
  registerIpamRoutes(app, opts.ipPools ?? new IpPools({ client: hosts.client, taskQueue: hosts.taskQueue }));
  registerSiteRoutes(app, opts.sites);
  registerFleetPage(app, opts.page ?? { temporalUi: { url: 'http://127.0.0.1:8233', namespace: hosts.client.options.namespace }, sites: [] });

  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  app.get('/healthz', { schema: { hide: true } }, async () => ({ ok: true }));

  app.put(
    '/v1/namespaces/:namespace/hosts/:name',
    {
      schema: {
        summary: 'Create a host or replace its spec (with optional credentials and user data)',
        params: HostParamsSchema,
        body: HostInputSchema,
      },
    },
    async (req, reply) => {
      const { created, view } = await hosts.put(req.params, req.body);
      return reply.status(created ? 201 : 200).send(view);
    },
  );

  app.get(
    '/v1/namespaces/:namespace/hosts/:name',
    { schema: { summary: 'Read a host: spec, status, current operation', params: HostParamsSchema } },
    async (req) => hosts.get(req.params),
  );

  app.get(
    '/v1/hosts',
    { schema: { summary: 'List hosts, optionally by namespace and provisioning state', querystring: ListQuerySchema } },
    async (req) => ({ items: (await hosts.list(req.query)).filter((h) => canView(req, h.namespace)) }),
  );

  app.put(
    '/v1/namespaces/:namespace/hosts/:name/image',
    { schema: { summary: 'Set the image: an available host is provisioned', params: HostParamsSchema, body: ImageBodySchema } },
    async (req) => hosts.setImage(req.params, req.body),
  );

  app.delete(
    '/v1/namespaces/:namespace/hosts/:name/image',
    { schema: { summary: 'Clear the image: a provisioned host is deprovisioned', params: HostParamsSchema } },
    async (req) => hosts.setImage(req.params, null),
  );

  app.delete(
    '/v1/namespaces/:namespace/hosts/:name',
    { config: answers({ 202: ACCEPTED }), schema: { summary: 'Delete a host: deprovision, power off, remove from Ironic', params: HostParamsSchema } },
    async (req, reply) => reply.status(202).send(await hosts.remove(req.params)),
  );

  app.post(
    '/v1/namespaces/:namespace/hosts/:name/adopt',
    {
      schema: {
        summary: 'Re-adopt a host whose workflow ended abnormally (terminated, failed, timed out): a new workflow takes its last state and its Ironic node as they are',
        params: HostParamsSchema,
      },
    },
    async (req) => hosts.adopt(req.params),
  );

  app.post(
    '/v1/namespaces/:namespace/hosts/:name/reboot',
    {
      config: answers({ 202: ACCEPTED }),
      schema: {
        summary: 'Reboot once (Metal3 reboot.metal3.io): soft first, hard if the OS has not shut down in time; or hard',
        params: HostParamsSchema,
        body: RebootBodySchema,
        headers: RebootHeadersSchema,
      },
    },
    async (req, reply) => reply.status(202).send(await hosts.reboot(req.params, req.body?.mode, req.headers['idempotency-key'])),
  );

  app.put(
    '/v1/namespaces/:namespace/hosts/:name/power-off-requests/:key',
    {
      schema: {
        summary: 'Keep the host powered off until this and every other key is released (Metal3 reboot.metal3.io/<key>)',
        params: PowerOffParamsSchema,
        body: RebootBodySchema,
      },
    },
    async (req) => hosts.holdPowerOff(req.params, req.params.key, req.body?.mode),
  );

  app.delete(
    '/v1/namespaces/:namespace/hosts/:name/power-off-requests/:key',
    { schema: { summary: 'Release a power-off request; the host powers on once none is left (and spec.online)', params: PowerOffParamsSchema } },
    async (req) => hosts.releasePowerOff(req.params, req.params.key),
  );

  app.put(
    '/v1/namespaces/:namespace/hosts/:name/paused',
    {
      schema: {
        summary: 'Pause the host: a running inspect, prepare, provision or power change is cancelled; nothing else runs (not even a delete) until resumed',
        params: HostParamsSchema,
        body: PauseBodySchema,
      },
    },
    async (req) => hosts.setPaused(req.params, true, req.body?.reason),
  );

  app.delete(
    '/v1/namespaces/:namespace/hosts/:name/paused',
    { schema: { summary: 'Resume a paused host: what it was asked to do meanwhile runs now', params: HostParamsSchema } },
    async (req) => hosts.setPaused(req.params, false),
  );

  app.put(
    '/v1/namespaces/:namespace/hosts/:name/detached',
    {
      schema: {
        summary: "Detach the host (Metal3's baremetalhost.metal3.io/detached): it leaves Ironic without deprovisioning or a power change, e.g. before another plane takes it",
        params: HostParamsSchema,
        body: DetachBodySchema,
      },
    },
    async (req) => hosts.setDetached(req.params, { deleteAction: req.body?.deleteAction ?? 'delete', force: req.body?.force ?? false }),
  );

  app.delete(
    '/v1/namespaces/:namespace/hosts/:name/detached',
    { schema: { summary: 'Attach a detached host again: it registers and a provisioned host is adopted as it is', params: HostParamsSchema } },
    async (req) => hosts.setDetached(req.params, undefined),
  );

  app.post(
    '/v1/namespaces/:namespace/hosts/:name/clean',
    {
      config: answers({ 202: ACCEPTED }),
      schema: {
        summary:
          'Manual cleaning of an available host: named steps in order (erase-metadata, erase-full, raid, bios, firmware), each an Ironic manual clean (spec.provisioner direct: bios and firmware only, over Redfish); the host is preparing meanwhile',
        params: HostParamsSchema,
        body: CleanBodySchema,
      },
    },
    async (req, reply) => reply.status(202).send(await hosts.clean(req.params, req.body as CleanRequest)),
  );

  app.put(
    '/v1/namespaces/:namespace/hosts/:name/raid',
    {
      config: answers({ 202: ACCEPTED }),
      schema: {
        summary: "Set the host's spec.raid (Metal3's hardwareRAIDVolumes or softwareRAIDVolumes; null clears it): built while the host prepares, held on a provisioned host",
        params: HostParamsSchema,
        body: RaidBodySchema,
      },
    },
    async (req, reply) => reply.status(202).send(await hosts.setRaid(req.params, req.body as HostSpec['raid'])),
  );

  app.delete(
    '/v1/namespaces/:namespace/hosts/:name/clean',
    { schema: { summary: 'Withdraw a manual clean: a running one is cancelled (not recorded as a failure) and the host made available again', params: HostParamsSchema } },
    async (req) => hosts.clean(req.params, null),
  );

  app.get(
    '/v1/namespaces/:namespace/hosts/:name/history',
    { schema: { summary: "The host's operation history and its recent operations", params: HostParamsSchema } },
    async (req) => {
      const view = await hosts.get(req.params);
      return { operationHistory: view.status.operationHistory, operations: view.operations, retryAt: view.retryAt };
    },
  );

  return app;
}
