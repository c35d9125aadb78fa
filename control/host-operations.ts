/**
 * The operations running hosts are in, as Temporal's visibility lists them:
 * one list per tick for every host a watcher on this worker asked about in
 * that tick, instead of a describe of each host's workflow. A fleet with 200
 * hosts in flight looks at each every 0.5-5 s: 40-50 describes a second,
 * nearly all answering "still in its operation".
 *
 * Visibility lags the host's own state by a moment, so an answer here only
 * ever spares a look: a host listed as in an operation is looked at again
 * at the next look; one not listed, or listed with none, is described as
 * before (control/host-run.ts markedHostRun). A failed list (a server whose
 * visibility has no query support) answers "not listed" for every host.
 */
import type { Client } from '@temporalio/client';
import { hostListClauses, hostListItem } from './host-list';

/** What the list says of a running host: the operation and provisioning state its search attributes name ('' none). */
export interface ListedOperation {
  operation: string;
  state: string;
}

/** Workflow ids per visibility query (the query's length stays well within the server's limit). */
const IDS_PER_LIST = 100;
/** How long asks are gathered before one list answers them all. */
const GATHER_MS = 250;

export class HostOperationLists {
  private asked = new Map<string, ((listed: ListedOperation | undefined) => void)[]>();
  private flush: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly client: Client) {}

  /** The host's running record as the next list shows it; undefined when it shows none (or the list failed). */
  operationOf(workflowId: string): Promise<ListedOperation | undefined> {
    return new Promise((resolve) => {
      const waiting = this.asked.get(workflowId);
      if (waiting) waiting.push(resolve);
      else this.asked.set(workflowId, [resolve]);
      this.flush ??= setTimeout(() => void this.answer(), GATHER_MS);
    });
  }

  private async answer(): Promise<void> {
    const asked = this.asked;
    this.asked = new Map();
    this.flush = undefined;
    const ids = [...asked.keys()];
    const listed = new Map<string, ListedOperation>();
    try {
      for (let i = 0; i < ids.length; i += IDS_PER_LIST) {
        const query = [...hostListClauses({ workflowIds: ids.slice(i, i + IDS_PER_LIST) }), `ExecutionStatus = 'Running'`].join(' AND ');
        for await (const info of this.client.workflow.list({ query })) {
          const item = hostListItem(info.searchAttributes);
          listed.set(info.workflowId, { operation: item.operation, state: item.provisioningState });
        }
      }
    } catch {
      listed.clear();
    }
    for (const [id, waiting] of asked) for (const resolve of waiting) resolve(listed.get(id));
  }
}
