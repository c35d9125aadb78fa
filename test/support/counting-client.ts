/**
 * A Temporal client that counts the reads it sends (queries, describes, lists): the
 * fleet's watchers are tested by how often they query (a workflow task on the
 * host's worker) and describe (a read of the server's state), not only by
 * what they answer.
 */
import { Client, type ConnectionLike } from '@temporalio/client';

export interface ReadCounts {
  queries: number;
  describes: number;
  /** Visibility lists (`client.workflow.list`). */
  lists: number;
}

export function countingClient(connection: ConnectionLike, namespace: string | undefined): { client: Client; reads: ReadCounts } {
  const reads: ReadCounts = { queries: 0, describes: 0, lists: 0 };
  const client = new Client({ connection, namespace });
  const list = client.workflow.list.bind(client.workflow);
  client.workflow.list = ((...args: Parameters<typeof list>) => {
    reads.lists += 1;
    return list(...args);
  }) as typeof client.workflow.list;
  const getHandle = client.workflow.getHandle.bind(client.workflow);
  client.workflow.getHandle = ((...args: Parameters<typeof getHandle>) => {
    const handle = getHandle(...args);
    const query = handle.query.bind(handle);
    const describe = handle.describe.bind(handle);
    handle.describe = () => {
      reads.describes += 1;
      return describe();
    };
    handle.query = ((...q: Parameters<typeof query>) => {
      reads.queries += 1;
      return query(...q);
    }) as typeof handle.query;
    return handle;
  }) as typeof client.workflow.getHandle;
  return { client, reads };
}
