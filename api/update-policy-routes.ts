/**
 * A host's HostUpdatePolicy in API mode: `PUT …/hosts/{name}/update-policy`
 * with Metal3's spec (`{"firmwareSettings": "onReboot", "firmwareUpdates":
 * "onReboot"}`), `DELETE` to remove it, `GET` to read it. A resource of its
 * own, as in Metal3, rather than a field of the host's spec: the spec stays
 * Metal3's BareMetalHost spec, and the policy can change without a spec
 * generation (it changes no desired state, only what servicing may do).
 * Not listed in auth/actions.ts, so changing it is admin's (it lets firmware
 * change on running hosts).
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { HostUpdatePolicySpecSchema, type HostUpdatePolicySpec } from '../model/host-update-policy';
import { setUpdatePolicyUpdate } from '../contracts/host';
import type { HostService } from './host-service';
import { HostParamsSchema } from './schemas';
import { answers, ACCEPTED } from './route-answers';

export function registerUpdatePolicyRoutes(base: FastifyInstance, hosts: HostService): void {
  const app = base.withTypeProvider<TypeBoxTypeProvider>();
  const path = '/v1/namespaces/:namespace/hosts/:name/update-policy';

  app.get(path, { schema: { summary: "The host's HostUpdatePolicy ({} when it has none: no servicing)", params: HostParamsSchema } }, async (req) => {
    const view = await hosts.get(req.params);
    return view.updatePolicy ?? {};
  });

  app.put(
    path,
    {
      config: answers({ 202: ACCEPTED }),
      schema: {
        summary:
          "Set the host's HostUpdatePolicy (Metal3's): firmwareSettings / firmwareUpdates onReboot let a provisioned host be serviced (bios / firmware steps); onPreparing or absent: not",
        params: HostParamsSchema,
        body: HostUpdatePolicySpecSchema,
      },
    },
    async (req, reply) => reply.status(202).send(await hosts.update(req.params, setUpdatePolicyUpdate, [req.body as HostUpdatePolicySpec])),
  );

  app.delete(path, { schema: { summary: "Remove the host's HostUpdatePolicy: a provisioned host is no longer serviced", params: HostParamsSchema } }, async (req) =>
    hosts.update(req.params, setUpdatePolicyUpdate, [null]),
  );
}
