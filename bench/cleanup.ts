/**
 * What a run that did not finish left behind, removed so it does not load the
 * next run: the host workflows of its namespaces (terminated) and their
 * Ironic nodes (maintenance, then deleted). Only names of the given
 * namespaces are touched.
 */
import { Client } from '@temporalio/client';
import { connectTemporalClient } from '../clients/temporal/connection';
import { IronicClient } from '../clients/ironic/client';

export async function cleanupNamespaces(temporalAddress: string, ironicUrl: string, namespaces: string[], reason: string): Promise<void> {
  const connection = await connectTemporalClient({ address: temporalAddress });
  try {
    const client = new Client({ connection });
    for (const ns of namespaces) {
      for await (const wf of client.workflow.list({ query: `WorkflowId STARTS_WITH "host/${ns}/" AND ExecutionStatus = "Running"` })) {
        await client.workflow.getHandle(wf.workflowId, wf.runId).terminate(reason).catch(() => undefined);
      }
    }
  } finally {
    await connection.close();
  }
  const ironic = new IronicClient({ url: ironicUrl });
  for (const n of await ironic.listNodeStates(['name'])) {
    if (!namespaces.some((ns) => n.name?.startsWith(`${ns}~`))) continue;
    await ironic.patchNode(n.uuid, [{ op: 'add', path: '/maintenance', value: true }]).catch(() => undefined);
    await ironic.deleteNode(n.uuid).catch(() => undefined);
  }
}
