/**
 * The controller's node health reporter (k8s/controller/node-health.ts) per
 * site, without a stack: each host is looked up in its own site's list (the
 * default site's Ironic read directly, a configured site's through its
 * reader), a dark site's hosts are written Unknown/SiteUnreachable, and a
 * failed read of the default site leaves its hosts as they were.
 */
import { describe, expect, it } from 'vitest';
import { NodeHealthReporter } from '../../k8s/controller/node-health';
import type { BareMetalHost } from '../../k8s/controller/bare-metal-host';
import type { IronicClient } from '../../clients/ironic/client';
import type { KubeRest } from '../../clients/kubernetes/kube-rest';
import type { NodeHealthListing } from '../../clients/ironic/node-health';

const host = (name: string, node: string, site?: string): BareMetalHost =>
  ({
    metadata: { namespace: 'ns', name, resourceVersion: '1', ...(site ? { labels: { 'metalflow.io/site': site } } : {}) },
    status: { operationalStatus: 'OK', provisioning: { state: 'provisioned', ID: node } },
  }) as unknown as BareMetalHost;

function reporter(opts: { defaultNodes: NodeHealthListing[] | Error; sites: Record<string, NodeHealthListing[] | Error>; hosts: BareMetalHost[] }) {
  const writes: Record<string, Record<string, string>> = {};
  const asked: string[] = [];
  const rest = {
    call: async (_m: string, path: string, o: { body: { status: { conditions: { type: string; status: string; reason: string; message: string }[] } } }) => {
      writes[path.split('/').slice(-2)[0]!] = Object.fromEntries(o.body.status.conditions.map((c) => [c.type, `${c.status}/${c.reason}${c.message ? `: ${c.message}` : ''}`]));
    },
  } as unknown as KubeRest;
  const ironic = {
    supports: async () => true,
    listNodeStates: async () => {
      asked.push('default');
      if (opts.defaultNodes instanceof Error) throw opts.defaultNodes;
      return opts.defaultNodes;
    },
  } as unknown as IronicClient;
  const r = new NodeHealthReporter({
    rest,
    ironic,
    sites: Object.keys(opts.sites),
    readSite: async (site) => {
      asked.push(site);
      const got = opts.sites[site]!;
      if (got instanceof Error) throw got;
      return got;
    },
    periodMs: 60_000,
    hosts: () => opts.hosts,
    log: () => undefined,
  });
  return { r, writes, asked };
}

describe('node health per site', () => {
  it("reads each host in its own site's list, and reports a dark site's hosts Unknown/SiteUnreachable", async () => {
    const dark = 'site unreachable: no worker of site "c" took the node health read from task queue site/c within 60 s';
    const { r, writes, asked } = reporter({
      defaultNodes: [{ uuid: 'n-a', fault: null, health: 'OK' }, { uuid: 'n-b', fault: null, health: 'Critical' }],
      sites: { b: [{ uuid: 'n-b', fault: 'power failure', health: 'Warning' }], c: new Error(dark) },
      hosts: [host('a', 'n-a'), host('b', 'n-b', 'b'), host('c', 'n-c', 'c'), host('x', 'n-x', 'nowhere')],
    });
    expect(await r.once()).toBe(3);
    expect(asked.sort()).toEqual(['b', 'c', 'default']);
    expect(writes.a).toMatchObject({ Healthy: 'True/Healthy' });
    // b's node is read at b: the default site's Ironic (which holds a node of that id here) is not asked for it.
    expect(writes.b).toMatchObject({ Healthy: 'False/Warning', Manageable: 'False/PowerFailure' });
    expect(writes.c).toMatchObject({ Healthy: `Unknown/SiteUnreachable: ${dark}`, Manageable: 'True/Manageable', Ready: 'True/Provisioned' });
    // A label naming no configured site: not read anywhere.
    expect(writes.x).toBeUndefined();
  });

  it("leaves the default site's hosts as they were when its Ironic cannot be read", async () => {
    const { r, writes } = reporter({ defaultNodes: new Error('connect ECONNREFUSED'), sites: {}, hosts: [host('a', 'n-a')] });
    expect(await r.once()).toBe(0);
    expect(writes).toEqual({});
  });
});
