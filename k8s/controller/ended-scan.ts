/**
 * Nothing about a BareMetalHost changes when its workflow is terminated or
 * fails, so no watch event would bring it to the reconciler: this asks
 * Temporal's visibility, every so often, which host workflows ended other
 * than by completing since the last look, and queues those hosts, which the
 * reconciler then re-adopts. One list call per period, whatever the fleet's size.
 */
import type { Client } from '@temporalio/client';
import { parseHostWorkflowId } from '../../model/host-ref';
import { SEARCH_ATTRIBUTES } from '../../model/search-attributes';
import { everyPeriod } from './periodic';

export interface EndedScanOptions {
  client: Client;
  periodMs: number;
  /** The watched namespaces; every namespace when unset. */
  watchNamespaces?: readonly string[];
  /** Queues a host by its informer key (`namespace/name`). */
  enqueue: (key: string) => void;
  log?: (message: string) => void;
}

/** Starts scanning; returns a stop function. Hosts closed before the start were queued by the informer's first list. */
export function scanEndedWorkflows(opts: EndedScanOptions): () => void {
  // Visibility is written shortly after a close: look back over a whole period more than the last one.
  let since = Date.now() - opts.periodMs;
  const scan = async (): Promise<void> => {
    const started = Date.now();
    const clauses = [
      `WorkflowType = 'hostWorkflow'`,
      `ExecutionStatus != 'Running'`,
      `ExecutionStatus != 'Completed'`,
      `ExecutionStatus != 'ContinuedAsNew'`,
      `CloseTime > '${new Date(since - opts.periodMs).toISOString()}'`,
    ];
    if (opts.watchNamespaces) clauses.push(`${SEARCH_ATTRIBUTES.hostNamespace.name} IN (${opts.watchNamespaces.map((ns) => `'${ns}'`).join(', ')})`);
    try {
      for await (const wf of opts.client.workflow.list({ query: clauses.join(' AND ') })) {
        const ref = parseHostWorkflowId(wf.workflowId);
        if (ref) opts.enqueue(`${ref.namespace}/${ref.name}`);
      }
      since = started;
    } catch (err) {
      opts.log?.(`could not list ended host workflows (retrying next period): ${err instanceof Error ? err.message : String(err)}`);
    }
  };
  return everyPeriod(scan, opts.periodMs);
}
