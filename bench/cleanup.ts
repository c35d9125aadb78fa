/**
 * What a run that did not finish left behind, removed so it does not load the
 * next run: the host workflows of its namespaces (terminated) and their
 * Ironic nodes (maintenance, then deleted). Only names of the given
 * namespaces are touched, and a node Ironic refuses to delete is named: one
 * Ironic left locked (its `reservation` set by a request that failed inside
 * it) refuses until its conductor restarts, and a node kept would hold its
 * boot MAC against the next run's host of the same name.
 */
import { Client } from '@temporalio/client';
import { connectTemporalClient } from '../clients/temporal/connection';
import { IronicClient } from '../clients/ironic/client';

/** A node's name as a bench run gives it: `<namespace>~<host>`, the namespace `bench-`, `floor-` or `fleet-` and the run id. */
const BENCH_NODE = /^(bench|floor|fleet)-[0-9a-f]{6}~/;

/** Deletes the nodes whose names `pick` selects: how many went, and each one Ironic kept, with why. */
async function deleteNodes(ironicUrl: string, pick: (name: string) => boolean): Promise<{ deleted: number; kept: string[] }> {
  const ironic = new IronicClient({ url: ironicUrl });
  const kept: string[] = [];
  let deleted = 0;
  for (const n of await ironic.listNodeStates(['name'])) {
    if (!n.name || !pick(n.name)) continue;
    try {
      await ironic.patchNode(n.uuid, [{ op: 'add', path: '/maintenance', value: true }]);
      await ironic.deleteNode(n.uuid);
      deleted += 1;
    } catch (err) {
      kept.push(`${n.name} (${n.uuid}): ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  return { deleted, kept };
}

/** Returns the nodes of `namespaces` that Ironic would not delete, each with its reason. */
export async function cleanupNamespaces(temporalAddress: string, ironicUrl: string, namespaces: string[], reason: string): Promise<string[]> {
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
  return (await deleteNodes(ironicUrl, (name) => namespaces.some((ns) => name.startsWith(`${ns}~`)))).kept;
}

/**
 * At a run's start: the nodes earlier runs left in the bench stack's Ironic (it is the bench's own), deleted. One
 * Ironic still refuses to delete fails the run before it starts, naming it: its boot MAC would refuse a host of ours.
 */
export async function removeLeftoverNodes(ironicUrl: string, log: (line: string) => void): Promise<void> {
  const { deleted, kept } = await deleteNodes(ironicUrl, (name) => BENCH_NODE.test(name));
  if (deleted > 0) log(`deleted ${deleted} Ironic nodes earlier runs left`);
  if (kept.length > 0) {
    throw new Error(`Ironic would not delete ${kept.length} nodes earlier runs left (Ironic releases a node it keeps locked when it restarts: a run started without --keep-stack stops the bench stack at its end): ${kept.join('; ')}`);
  }
}
