/**
 * IP address management in API mode: IPPools and their claims, answered as
 * Metal3's objects (`ipam.metal3.io/v1alpha1` IPPool, IPClaim, IPAddress).
 * A pool is its workflow (`ippool/<ns>/<name>`); a claim is an entry of its
 * pool's table, so claims live under their pool. Allocation is idempotent by
 * claim: a PUT sent again answers the same address.
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { IpamError, type ClaimAllocation, type IpPools } from '../control/ip-pools';
import { IPAM_API_VERSION, IPPoolSpecSchema, IpAddressStringSchema, ipAddressSpec, type IPPoolSpec, type PoolRef } from '../model/ipam';
import { objectNameErrors, validatePoolSpec } from '../model/ipam-validate';
import type { PoolView } from '../contracts/ippool';
import { ApiError } from './host-service';
import { HostParamsSchema } from './schemas';
import { canView } from './auth/guard';

const PoolParamsSchema = HostParamsSchema;
const ClaimParamsSchema = Type.Object({ ...HostParamsSchema.properties, claim: Type.String({ maxLength: 253, description: 'The IPClaim\'s name' }) });
const PoolBodySchema = Type.Object({ spec: IPPoolSpecSchema }, { additionalProperties: false });
const ClaimBodySchema = Type.Object(
  { requestedAddress: Type.Optional({ ...IpAddressStringSchema, description: "This address or none (Metal3's ipAddress annotation on an IPClaim)" }) },
  { additionalProperties: false, 'x-optional': true },
);
const ListQuerySchema = Type.Object({ namespace: Type.Optional(Type.String({ maxLength: 63 })) }, { additionalProperties: false });

const STATUS: Record<IpamError['type'], 400 | 404 | 409> = {
  InvalidRequest: 400,
  NotFound: 404,
  Conflict: 409,
  PoolExhausted: 409,
  PreAllocationOutOfBounds: 409,
  AddressUnavailable: 409,
};

function apiError(err: unknown): unknown {
  return err instanceof IpamError ? new ApiError(STATUS[err.type], err.type, err.message, err.fields) : err;
}

export function ipPoolObject(view: PoolView): Record<string, unknown> {
  return {
    apiVersion: IPAM_API_VERSION,
    kind: 'IPPool',
    metadata: { name: view.ref.name, namespace: view.ref.namespace },
    spec: view.spec,
    status: view.status,
    size: view.size,
    allocated: view.allocated,
  };
}

function ipClaimObject(ref: PoolRef, a: ClaimAllocation): Record<string, unknown> {
  return {
    apiVersion: IPAM_API_VERSION,
    kind: 'IPClaim',
    metadata: { name: a.claim, namespace: ref.namespace },
    spec: { pool: { name: ref.name, namespace: ref.namespace } },
    status: { address: { name: a.name, namespace: ref.namespace } },
    ipAddress: { apiVersion: IPAM_API_VERSION, kind: 'IPAddress', metadata: { name: a.name, namespace: ref.namespace }, spec: ipAddressSpec(ref, a.claim, a) },
  };
}

async function translated<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw apiError(err);
  }
}

export function registerIpamRoutes(base: FastifyInstance, pools: IpPools): void {
  const app = base.withTypeProvider<TypeBoxTypeProvider>();
  const POOL = '/v1/namespaces/:namespace/ippools/:name';

  app.put(
    POOL,
    { schema: { summary: 'Create an IPPool or replace its spec (Metal3 ipam.metal3.io/v1alpha1 IPPoolSpec); namePrefix cannot change, allocated addresses must stay inside the ranges', params: PoolParamsSchema, body: PoolBodySchema } },
    async (req, reply) => {
      const ref = req.params;
      const errors = objectNameErrors('path.name', ref.name, 'IPPool');
      const valid = validatePoolSpec(req.body.spec);
      const all = [...errors, ...(valid.ok ? [] : valid.errors)];
      if (all.length > 0) throw new ApiError(400, 'InvalidRequest', all.map((e) => `${e.field}: ${e.reason}`).join('; '), all);
      const { created, view } = await translated(() => pools.apply(ref, req.body.spec as IPPoolSpec));
      return reply.status(created ? 201 : 200).send(ipPoolObject(view));
    },
  );

  app.get(POOL, { schema: { summary: 'Read an IPPool: spec, status.indexes (claim → address), size and how many are allocated', params: PoolParamsSchema } }, async (req) =>
    ipPoolObject(await translated(() => pools.view(req.params))),
  );

  app.get('/v1/ippools', { schema: { summary: 'List IPPools (namespace and name), optionally of one namespace', querystring: ListQuerySchema } }, async (req) => ({
    items: (await pools.list(req.query.namespace)).filter((p) => canView(req, p.namespace)),
  }));

  app.delete(POOL, { schema: { summary: 'Delete an IPPool; 409 while any claim holds an address', params: PoolParamsSchema } }, async (req) =>
    ipPoolObject(await translated(() => pools.remove(req.params))),
  );

  const poolOf = (p: { namespace: string; name: string }): PoolRef => ({ namespace: p.namespace, name: p.name });

  app.put(
    `${POOL}/claims/:claim`,
    {
      schema: {
        summary: 'Claim an address from the pool (Metal3 IPClaim): the same claim always gets the same address; 409 PoolExhausted when the pool is full',
        params: ClaimParamsSchema,
        body: ClaimBodySchema,
      },
    },
    async (req) => {
      const ref = poolOf(req.params);
      const a = await translated(() => pools.allocate(ref, { claim: req.params.claim, ...(req.body?.requestedAddress ? { requestedAddress: req.body.requestedAddress } : {}) }));
      return ipClaimObject(ref, a);
    },
  );

  app.get(`${POOL}/claims/:claim`, { schema: { summary: 'Read a claim: its IPClaim status and IPAddress', params: ClaimParamsSchema } }, async (req) => {
    const ref = poolOf(req.params);
    const a = await translated(() => pools.claim(ref, req.params.claim));
    if (!a) throw new ApiError(404, 'NotFound', `claim ${req.params.claim} holds no address in IP pool ${ref.namespace}/${ref.name}`);
    return ipClaimObject(ref, a);
  });

  app.get(`${POOL}/claims`, { schema: { summary: "The pool's claims and their addresses (status.indexes)", params: PoolParamsSchema } }, async (req) => {
    const view = await translated(() => pools.view(req.params));
    return { items: Object.entries(view.status.indexes).map(([claim, address]) => ({ claim, address })) };
  });

  app.delete(`${POOL}/claims/:claim`, { schema: { summary: 'Release the claim\'s address: it may be allocated again from now on', params: ClaimParamsSchema } }, async (req) => {
    const released = await translated(() => pools.release(poolOf(req.params), req.params.claim));
    return { released };
  });
}
