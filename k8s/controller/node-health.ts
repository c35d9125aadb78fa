/**
 * The `Healthy` condition and `Manageable`'s `PowerFailure` reason of every
 * BareMetalHost, from its Ironic node, as BMO's computeConditions reads them
 * on each reconcile (`GetHealth`: the node's `health`, API 1.109, which
 * Ironic's power sync caches from the BMC; `HasPowerFailure`: the node's
 * `fault` is `power failure`).
 *
 * The controller reads them, not the worker: they change while a host rests
 * and its workflow publishes nothing. One paged list of every node's fault and
 * health per period (not a request per host); a host's conditions are written
 * only when a type's status or reason changes, with the object's
 * resourceVersion, so a status the worker wrote in between is never
 * overwritten (the next period reads it again). The worker's own writes keep
 * what this wrote (model/conditions.ts).
 *
 * Per site (docs/sites.md): a host is looked up in its own site's list (the
 * `metalflow.io/site` label; none: the default site). The default site's
 * Ironic is read here, as before; a configured site's only through its site
 * worker (control/node-health.ts: a short workflow whose one list runs on the
 * site's task queue), since the central plane holds neither a site's Ironic
 * credentials nor a route into the site. A site that does not take the list
 * within the site watch (METALFLOW_SITE_WATCH_SECONDS), or whose worker
 * cannot read its Ironic, is dark: its hosts get `Healthy` `Unknown` /
 * `SiteUnreachable` with the reason, never `False` or `PowerFailure` (what
 * the last reading said of a power failure is kept), and their next reading
 * once the site answers replaces it. Sites are read side by side: a dark one
 * holds up only its own hosts' writes.
 */
import type { IronicClient } from '../../clients/ironic/client';
import { listNodeHealth, type NodeHealthListing } from '../../clients/ironic/node-health';
import { isKubeError } from '../../clients/kubernetes/kube-error';
import type { KubeRest } from '../../clients/kubernetes/kube-rest';
import { computeConditions, kubeTimestamp, type HostCondition, type NodeReading } from '../../model/conditions';
import { DEFAULT_SITE, SITE_LABEL } from '../../model/site';
import type { BareMetalHost } from './bare-metal-host';

export interface NodeHealthDeps {
  rest: KubeRest;
  /** The default site's Ironic, read here. */
  ironic: IronicClient;
  /** The configured sites other than the default one (a host labelled with another is InvalidSpec, and not read). */
  sites?: readonly string[];
  /** A configured site's nodes, through its site worker; throws an Error whose message says the site is unreachable. */
  readSite?: (site: string) => Promise<NodeHealthListing[]>;
  periodMs: number;
  hosts: () => Iterable<BareMetalHost>;
  log: (line: string) => void;
}

const digest = (cs: unknown): string =>
  (Array.isArray(cs) ? (cs as HostCondition[]) : [])
    .map((c) => `${c.type}=${c.status}/${c.reason}/${c.message}`)
    .sort()
    .join(',');

/** A site's read: its nodes, or why they could not be read. */
type SiteRead = { nodes: Map<string, NodeReading> } | { unread: string };

export class NodeHealthReporter {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** The sites whose last read failed, so a failing site is logged once per streak, not every period. */
  private readonly failing = new Set<string>();

  constructor(private readonly deps: NodeHealthDeps) {}

  start(): void {
    const tick = async (): Promise<void> => {
      if (this.stopped) return;
      await this.once().catch((err: unknown) => this.deps.log(`node health: ${(err as Error).message}`));
      if (!this.stopped) this.timer = setTimeout(() => void tick(), this.deps.periodMs);
    };
    void tick();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  /** One pass: reads every site that has hosts, writes the hosts whose conditions change; returns how many. */
  async once(): Promise<number> {
    const bySite = new Map<string, BareMetalHost[]>();
    for (const host of [...this.deps.hosts()]) {
      const label = host.metadata.labels?.[SITE_LABEL];
      const site = !label || label === DEFAULT_SITE ? DEFAULT_SITE : label;
      // A label naming no configured site makes the host InvalidSpec (reconciler.ts): no site to read it at.
      if (site !== DEFAULT_SITE && !(this.deps.sites ?? []).includes(site)) continue;
      (bySite.get(site) ?? bySite.set(site, []).get(site)!).push(host);
    }
    // The default site is read every period even with no host, as before (its failures are logged).
    if (!bySite.has(DEFAULT_SITE)) bySite.set(DEFAULT_SITE, []);
    const written = await Promise.all([...bySite].map(async ([site, hosts]) => this.site(site, hosts, await this.read(site))));
    return written.reduce((a, b) => a + b, 0);
  }

  private async read(site: string): Promise<SiteRead | undefined> {
    const where = site === DEFAULT_SITE ? "Ironic's nodes" : `the nodes of site "${site}"`;
    try {
      const listed = site === DEFAULT_SITE ? await listNodeHealth(this.deps.ironic) : await this.readSite(site);
      if (this.failing.delete(site)) this.deps.log(`node health: reading ${where} again`);
      return { nodes: new Map(listed.map((n) => [n.uuid, { fault: n.fault, health: n.health }])) };
    } catch (err) {
      const message = (err as Error).message;
      if (!this.failing.has(site)) {
        this.deps.log(`node health: cannot read ${where} (retried every ${this.deps.periodMs / 1000} s): ${message}${site === DEFAULT_SITE ? '' : "; its hosts' Healthy is Unknown/SiteUnreachable meanwhile"}`);
      }
      this.failing.add(site);
      // The default site's Ironic is the controller's own peer: a failed read leaves its hosts as they were.
      return site === DEFAULT_SITE ? undefined : { unread: message };
    }
  }

  private readSite(site: string): Promise<NodeHealthListing[]> {
    if (!this.deps.readSite) throw new Error(`no reader of site "${site}"`);
    return this.deps.readSite(site);
  }

  private async site(site: string, hosts: BareMetalHost[], read: SiteRead | undefined): Promise<number> {
    if (!read) return 0;
    let written = 0;
    for (const host of hosts) {
      const status = host.status;
      const provisioning = status?.provisioning;
      if (!status || !provisioning?.ID || host.metadata.deletionTimestamp) continue;
      const node = 'nodes' in read ? read.nodes.get(provisioning.ID) : undefined;
      // Not in its site's list: a host moving to the label's site before its switch, or one Ironic lost (it registers again).
      if ('nodes' in read && !node) continue;
      const conditions = computeConditions({ provisioning, operationalStatus: status.operationalStatus ?? '' }, status.conditions, {
        now: kubeTimestamp(new Date()),
        generation: host.metadata.generation,
        ...(node ? { node } : {}),
        ...('unread' in read ? { siteUnread: read.unread } : {}),
      });
      if (digest(conditions) === digest(status.conditions)) continue;
      if (await this.write(host, conditions)) written++;
    }
    return written;
  }

  private async write(host: BareMetalHost, conditions: HostCondition[]): Promise<boolean> {
    const { namespace = '', name, resourceVersion } = host.metadata;
    try {
      await this.deps.rest.call('PATCH', `/apis/metal3.io/v1alpha1/namespaces/${namespace}/baremetalhosts/${name}/status`, {
        body: { metadata: { resourceVersion }, status: { conditions } },
        contentType: 'application/merge-patch+json',
      });
      return true;
    } catch (err) {
      // Changed or gone since the informer saw it: the next period reads it again.
      if ((isKubeError(err, 'conflict') || isKubeError(err, 'not-found'))) return false;
      this.deps.log(`${namespace}/${name}: node health conditions not written: ${(err as Error).message}`);
      return false;
    }
  }
}
