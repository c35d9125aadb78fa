/**
 * One host's re-inspection from the HTTP API: what a fleet operation's
 * `reinspect` does to each of its hosts, and the `inspect.metal3.io`
 * annotation in Kubernetes mode. The same refusals as the fleet's
 * (contracts/fleet-goals.ts), as a 409 with the reason.
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { requestInspectionUpdate, resetProvisioningFailCountUpdate, type HostView } from '../contracts/host';
import { whyNotActionable } from '../contracts/fleet-goals';
import type { FleetOperation } from '../model/fleet';
import { ApiError, type HostService } from './host-service';
import { HostParamsSchema } from './schemas';
import { answers, ACCEPTED } from './route-answers';

/** The fleet's refusal for this host, as a 409; a BareMetalHost's host is changed through its object. */
const refuse = (op: FleetOperation, annotation: string) => (view: HostView) => {
  if (view.managedBy === 'kubernetes') {
    throw new ApiError(409, 'Conflict', `the host is driven by its BareMetalHost (Kubernetes mode): set the ${annotation} annotation on it instead`);
  }
  const why = whyNotActionable(op, { kind: 'running', view });
  if (why) throw new ApiError(409, 'Conflict', why);
};

export function registerHostActionRoutes(base: FastifyInstance, hosts: HostService): void {
  const app = base.withTypeProvider<TypeBoxTypeProvider>();
  app.post(
    '/v1/namespaces/:namespace/hosts/:name/inspect',
    {
      config: answers({ 202: ACCEPTED }),
      schema: {
        summary: 'Inspect the host again (now when it is available; once its running operation ends otherwise); 409 when provisioned, paused, detached or being deleted',
        params: HostParamsSchema,
      },
    },
    async (req, reply) => reply.status(202).send(await hosts.update(req.params, requestInspectionUpdate, [], refuse({ kind: 'reinspect' }, 'inspect.metal3.io'))),
  );
  app.delete(
    '/v1/namespaces/:namespace/hosts/:name/provisioning-fail-count',
    {
      config: answers({ 202: ACCEPTED }),
      schema: {
        summary: "Reset status.provisioningFailCount to 0, as Metal3 users edit it: a host stopped at the provisioning retry limit provisions its image again (202); 409 when nothing is counted or the host is a BareMetalHost's",
        params: HostParamsSchema,
      },
    },
    async (req, reply) =>
      reply.status(202).send(
        await hosts.update(req.params, resetProvisioningFailCountUpdate, [{ provisioningFailCount: 0 }], (view: HostView) => {
          if (view.managedBy === 'kubernetes') {
            throw new ApiError(409, 'Conflict', 'the host is driven by its BareMetalHost (Kubernetes mode): set status.provisioningFailCount on it instead (kubectl patch --subresource=status)');
          }
          // Nothing to forget: said, rather than a 202 that changed nothing.
          if (!view.status.provisioningFailCount) {
            throw new ApiError(409, 'Conflict', `host ${view.ref.namespace}/${view.ref.name} has no failed deploy counted (status.provisioningFailCount is 0): there is nothing to reset`);
          }
        }),
      ),
  );
}
