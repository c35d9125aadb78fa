/**
 * The run's own view of Ironic, read directly (not through the fault proxy)
 * once a second: which node belongs to which host (node names are
 * `<namespace>~<name>`; a node re-created after Ironic lost its database is
 * a new node of the same host), and each node's provision states with when
 * they were seen, so a second deploy can be told apart from a retry of one
 * that Ironic itself failed.
 */
import { IronicClient } from '../../clients/ironic/client';
import { sleep } from '../common';

export interface NodeTrack {
  uuid: string;
  /** `<namespace>/<name>` of the host. */
  host: string;
  states: { state: string; at: number }[];
}

export class IronicWatch {
  readonly nodes = new Map<string, NodeTrack>();
  private readonly ironic: IronicClient;
  private stopped = false;
  private loop?: Promise<void>;
  /** Reads that failed (Ironic restarting). */
  failedReads = 0;

  constructor(
    url: string,
    /** Only nodes whose name starts with one of these (`<namespace>~`). */
    private readonly namespaces: string[],
    private readonly intervalMs = 1000,
  ) {
    this.ironic = new IronicClient({ url, requestTimeoutMs: 5000 });
  }

  start(): void {
    this.loop = (async () => {
      while (!this.stopped) {
        await this.read().catch(() => (this.failedReads += 1));
        await sleep(this.intervalMs);
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }

  /** One read of every node now; also returns it (e.g. the active nodes just before Ironic loses its database). */
  async read(): Promise<{ uuid: string; host: string; state: string }[]> {
    const at = Date.now();
    const out: { uuid: string; host: string; state: string }[] = [];
    for (const n of await this.ironic.listNodeStates(['name', 'provision_state'])) {
      const host = this.hostOfName(n.name ?? '');
      if (!host) continue;
      let track = this.nodes.get(n.uuid);
      if (!track) this.nodes.set(n.uuid, (track = { uuid: n.uuid, host, states: [] }));
      if (track.states.at(-1)?.state !== n.provision_state) track.states.push({ state: n.provision_state, at });
      out.push({ uuid: n.uuid, host, state: n.provision_state });
    }
    return out;
  }

  private hostOfName(name: string): string | undefined {
    const [ns, host] = name.split('~');
    return ns && host && this.namespaces.includes(ns) ? `${ns}/${host}` : undefined;
  }

  /** The host a request path names (`/v1/nodes/<uuid or name>/…`), if it is one of ours. */
  hostOfPath(path: string): { host: string; node: string } | undefined {
    const ident = /^\/v1\/nodes\/([^/?]+)/.exec(path)?.[1];
    if (!ident) return undefined;
    const byUuid = this.nodes.get(ident);
    if (byUuid) return { host: byUuid.host, node: ident };
    const host = this.hostOfName(decodeURIComponent(ident));
    if (!host) return undefined;
    // By name: the newest node of that host, so requests by name and by uuid count on one node.
    const newest = [...this.nodes.values()].filter((t) => t.host === host).at(-1);
    return { host, node: newest?.uuid ?? ident };
  }

  /** Was the node seen in one of `states` between the two times? */
  seenIn(node: string, states: string[], from: number, to: number): boolean {
    return (this.nodes.get(node)?.states ?? []).some((s, i, all) => {
      const until = all[i + 1]?.at ?? Number.POSITIVE_INFINITY;
      return states.includes(s.state) && s.at <= to && until >= from;
    });
  }
}
