/**
 * One AsyncLocalStorage for the operation labels of every workflow in the
 * worker, not one per cached workflow (workflows/host/operation-label.ts). On
 * Node 20 each enabled storage puts a property on every promise the workflow
 * thread creates: with a storage per workflow, a promise of any workflow
 * carried two properties per cached workflow (the SDK's cancellation scope
 * storage and ours), and memory and CPU grew with the square of the cache
 * (400-host benchmark: 420 MB of a 510 MB live workflow heap). Here cached
 * probes that labelled an operation add no property to a new promise, and
 * probes with a storage each (the old module's shape) add one each.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { WORKFLOW_BUNDLE_OPTIONS } from '../../workers/worker';
import { startHarness, uniq, type Harness } from '../support/harness';
import { promiseSymbolsQuery } from '../support/label-probe-workflows';

let h: Harness;
const started: string[] = [];

beforeAll(async () => {
  const { code } = await bundleWorkflowCode({
    ...WORKFLOW_BUNDLE_OPTIONS,
    workflowsPath: fileURLToPath(new URL('../support/label-probe-workflows.ts', import.meta.url)),
    logger: new DefaultLogger('WARN'),
  });
  h = await startHarness({ workflowCode: code });
});

afterAll(async () => {
  await Promise.all(started.map((id) => h?.client.workflow.getHandle(id).terminate('test done').catch(() => undefined)));
  await h?.close();
});

/** Starts `n` probes (`own`: each with a storage of its own); answers the last one's count once all are cached. */
async function startProbes(n: number, own: boolean): Promise<number> {
  let symbols = 0;
  for (let i = 0; i < n; i++) {
    const id = uniq('label-probe');
    const handle = await h.client.workflow.start('labelProbeWorkflow', { taskQueue: h.taskQueue, workflowId: id, args: [id, own] });
    started.push(id);
    const seen = await handle.query(promiseSymbolsQuery);
    expect(seen.label).toBe(id);
    symbols = seen.symbols;
  }
  return symbols;
}

describe('operation labels', () => {
  it('share one storage: labelled workflows add nothing to every promise, where a storage each added one per workflow', async () => {
    // Every probe stays cached (the worker keeps 400), so each later count covers all before it.
    const first = await startProbes(10, false);
    const labelled = await startProbes(20, false);
    expect(labelled - first).toBe(0);
    // The control: 20 workflows with a storage each (the old module) put 20 more properties on every promise.
    const control = await startProbes(20, true);
    expect(control - labelled).toBe(20);
  });
});
