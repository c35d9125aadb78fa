/**
 * After each stack file: the Ironic nodes of the hosts it made leave the shared test Ironic.
 *
 * A node left behind is not free: Ironic's power sync visits it every `sync_power_state_interval`, and for a
 * Redfish node each visit opens four sessions, each hashing the BMC password with PBKDF2 (600,000 rounds, some
 * 0.5 s of Ironic's CPU: ironic/drivers/modules/redfish/utils.py, SessionCache). A few dozen such nodes kept Ironic
 * busy for the rest of the run (docs/testing.md, "How long it takes"). Nodes are matched by the host names `uniq()`
 * handed out in this file and by the Kubernetes namespaces it prepared: both are the file's own, so a file running
 * beside it keeps its nodes. Best effort: a node that cannot go (locked, already gone) stays.
 */
import { afterAll } from 'vitest';
import { takeFileNames } from './file-names';
import { IRONIC_URL } from './env';

const HEADERS = { 'x-openstack-ironic-api-version': 'latest', 'content-type': 'application/json' };

interface ListedNode {
  uuid: string;
  name: string | null;
  extra: Record<string, unknown>;
}

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
  const signal = AbortSignal.timeout(20_000);
  const res = await fetch(`${IRONIC_URL}/v1/nodes?fields=uuid,name,extra&limit=1000`, { headers: HEADERS, signal });
  if (!res.ok) return;
  const { nodes } = (await res.json()) as { nodes: ListedNode[] };
  for (const node of fileNodes(nodes, names, namespaces)) {
    await fetch(`${IRONIC_URL}/v1/nodes/${node.uuid}/maintenance`, { method: 'PUT', headers: HEADERS, body: JSON.stringify({ reason: 'test file done' }), signal });
    await fetch(`${IRONIC_URL}/v1/nodes/${node.uuid}`, { method: 'DELETE', headers: HEADERS, signal });
  }
}

afterAll(async () => {
  await removeFileNodes().catch(() => undefined);
}, 30_000);
