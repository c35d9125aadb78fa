/**
 * Remediations in API mode: `POST …/hosts/{name}/remediations` starts one
 * (workflow `remediation/<ns>/<host>/<uid>`), GET reads them. Without
 * Kubernetes there is no Node: a remediation is the power cycle alone
 * (power off hard through the host workflow's keyed request, wait for off,
 * release, wait for on).
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { WorkflowNotFoundError } from '@temporalio/client';
import { RemediationInputSchema, type RemediationRequest } from '../model/remediation';
import type { HostRef } from '../model/host';
import { initialRemediationView, remediationQuery, remediationWorkflowId, type RemediationInput, type RemediationView } from '../contracts/remediation';
import type { RemediateWorkflow } from '../contracts/remediation';
import { ApiError, type HostService } from './host-service';
import { HostParamsSchema } from './schemas';
import { answers } from './route-answers';

const RemediationParamsSchema = Type.Object({ ...HostParamsSchema.properties, uid: Type.String({ maxLength: 64, description: 'The remediation\'s uid' }) });

interface RemediationItem {
  uid: string;
  workflowId: string;
  status: string;
}

export function registerRemediationRoutes(base: FastifyInstance, hosts: HostService): void {
  const app = base.withTypeProvider<TypeBoxTypeProvider>();
  const client = hosts.client;
  const prefix = (ref: HostRef): string => remediationWorkflowId(ref, '');

  /** The host's remediations, newest first (Temporal's visibility: a just-started one may take a moment to be listed). */
  async function list(ref: HostRef): Promise<RemediationItem[]> {
    const items: RemediationItem[] = [];
    for await (const wf of client.workflow.list({ query: `WorkflowType = 'remediateWorkflow'` })) {
      if (wf.workflowId.startsWith(prefix(ref))) items.push({ uid: wf.workflowId.slice(prefix(ref).length), workflowId: wf.workflowId, status: wf.status.name });
    }
    return items;
  }

  async function read(ref: HostRef, uid: string): Promise<RemediationView & { workflowStatus: string }> {
    const handle = client.workflow.getHandle<RemediateWorkflow>(remediationWorkflowId(ref, uid));
    try {
      const [d, view] = await Promise.all([handle.describe(), handle.query(remediationQuery)]);
      return { ...view, workflowStatus: d.status.name };
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw new ApiError(404, 'NotFound', `no remediation ${uid} of host ${ref.namespace}/${ref.name}`);
      throw err;
    }
  }

  app.post(
    '/v1/namespaces/:namespace/hosts/:name/remediations',
    {
      config: answers({ 201: 'Created: the remediation runs' }),
      schema: {
        summary: 'Remediate the host with CAPM3\'s reboot strategy (API mode: power off hard, wait for off, power on; retried up to retryLimit). 409 while one runs',
        params: HostParamsSchema,
        body: { ...RemediationInputSchema, 'x-validator': 'remediation-input' },
      },
    },
    async (req, reply) => {
      const ref = req.params;
      const request = req.body as RemediationRequest;
      if (request.nodeHandling !== undefined || request.nodeName !== undefined) {
        const field = request.nodeHandling !== undefined ? 'nodeHandling' : 'nodeName';
        throw new ApiError(400, 'InvalidRequest', `${field}: API mode has no Node; a remediation is the power cycle only`, [
          { field, reason: 'API mode has no Node; a remediation is the power cycle only (leave it out)' },
        ]);
      }
      const host = await hosts.get(ref); // 404 for a host that does not exist
      if (host.managedBy === 'kubernetes') {
        // Its power-off requests are its BareMetalHost's annotations: the controller would release one sent here.
        throw new ApiError(409, 'Conflict', `host ${ref.namespace}/${ref.name} is a BareMetalHost: create a HostRemediation (metalflow.io/v1alpha1) instead`);
      }
      const running = (await list(ref)).find((r) => r.status === 'RUNNING');
      if (running) throw new ApiError(409, 'Conflict', `remediation ${running.uid} of host ${ref.namespace}/${ref.name} is running`);
      const uid = randomUUID();
      const input: RemediationInput = { ref, uid, request, kubernetes: false };
      await client.workflow.start<RemediateWorkflow>('remediateWorkflow', { taskQueue: hosts.taskQueue, workflowId: remediationWorkflowId(ref, uid), args: [input] });
      // A workflow whose first task has not run yet may not answer a query on a busy server: its starting view then.
      const view = await read(ref, uid).catch(() => ({ ...initialRemediationView(input), workflowStatus: 'RUNNING' }));
      return reply.status(201).send(view);
    },
  );

  app.get(
    '/v1/namespaces/:namespace/hosts/:name/remediations',
    { schema: { summary: 'The host\'s remediations (uid and workflow status)', params: HostParamsSchema } },
    async (req) => ({ items: await list(req.params) }),
  );

  app.get(
    '/v1/namespaces/:namespace/hosts/:name/remediations/:uid',
    { schema: { summary: 'A remediation: phase, retryCount, lastRemediated, outcome and its steps', params: RemediationParamsSchema } },
    async (req) => read({ namespace: req.params.namespace, name: req.params.name }, req.params.uid),
  );
}
