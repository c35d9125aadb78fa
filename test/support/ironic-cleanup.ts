/**
 * After each stack file: the Ironic nodes of the hosts it made leave the shared test Ironic.
 *
 * A node left behind is not free: Ironic's power sync visits it every `sync_power_state_interval`, and for a
 * Redfish node each visit opens four sessions, each hashing the BMC password with PBKDF2 (600,000 rounds, some
 * 0.5 s of Ironic's CPU: ironic/drivers/modules/redfish/utils.py, SessionCache). Each one left costs Ironic that for the rest of the
 * run (docs/testing.md, "How long it takes"). Nodes are matched by the host names `uniq()`
 * handed out in this file and by the Kubernetes namespaces it prepared: both are the file's own, so a file running
 * beside it keeps its nodes. Best effort: a node that cannot go (locked, already gone) stays.
 */
import { afterAll } from 'vitest';
import { IronicClient } from '../../clients/ironic/client';
import type { IronicNode } from '../../clients/ironic/types';
import { takeFileNames } from './file-names';
import { IRONIC_URL } from './env';

type ListedNode = Pick<IronicNode, 'uuid' | 'name' | 'extra'>;

/** The nodes whose owner mark (`<namespace>/<name>`) or name is one of this file's. */
export function fileNodes(nodes: ListedNode[], names: ReadonlySet<string>, namespaces: ReadonlySet<string>): ListedNode[] {
  return nodes.filter((n) => {
    const owner = typeof n.extra?.metalflow_host === 'string' ? n.extra.metalflow_host : '';
    const [ns = '', name = ''] = owner.split('/');
    return names.has(name) || namespaces.has(ns) || (n.name !== null && [...names].some((x) => n.name!.includes(x)));
  });
}

async function removeFileNodes(): Promise<void> {
  const { names, namespaces } = takeFileNames();
  if (names.size === 0 && namespaces.size === 0) return;
  const ironic = new IronicClient({ url: IRONIC_URL });
  for (const node of fileNodes(await ironic.listNodeStates(['name', 'extra']), names, namespaces)) {
    await ironic.setMaintenance(node.uuid, 'test file done').catch(() => undefined);
    await ironic.deleteNode(node.uuid).catch(() => undefined);
  }
}

afterAll(async () => {
  await removeFileNodes().catch(() => undefined);
}, 30_000);
