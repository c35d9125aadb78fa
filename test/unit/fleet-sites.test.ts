/**
 * Fleet operations over sites, the stack-free parts: `selector.sites` and
 * `maxConcurrentPerSite` in the input, the check against the configured
 * sites, selection by site, the visibility query, the per-site budget (which
 * host starts next), the sites carried to the next run, and the selection
 * activity's reading of a host whose run never indexed its site (a run begun
 * before hosts set MetalflowSite, which the current code cannot make on the
 * stack).
 */
import { describe, expect, it } from 'vitest';
import type { Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { fleetSiteErrors, fleetUsesSites, validateFleetInput } from '../../model/fleet';
import { validatePivotInput } from '../../model/pivot';
import { selectionMatches } from '../../model/fleet-selection';
import { hostListClauses } from '../../control/host-list';
import { SiteBudget, concurrencyLimit, countsBySite, selectionSites } from '../../contracts/fleet-plan';
import type { FleetHostOutcome, FleetState } from '../../contracts/fleet';
import { packFleetState, unpackFleetState } from '../../workflows/fleet/carry';
import { createFleetActivities } from '../../activities/fleet/activities';
import { SEARCH_ATTRIBUTES } from '../../model/search-attributes';

const good = { name: 'edge-reboot', operation: { kind: 'reboot' }, selector: { namespace: 'lab' } };
const fields = (input: unknown) => {
  const r = validateFleetInput(input);
  return r.ok ? [] : r.errors.map((e) => e.field);
};

describe('fleet input with sites', () => {
  it('takes sites as a criterion of their own and a per-site cap; names each bad field', () => {
    expect(validateFleetInput({ ...good, selector: { sites: ['edge-1', 'default'] }, maxConcurrentPerSite: 4 }).ok).toBe(true);
    expect(fields({ ...good, selector: { sites: [] } })).toEqual(['selector.sites']);
    expect(fields({ ...good, selector: { sites: ['Edge_1'] } })).toEqual(['selector.sites[0]']);
    expect(fields({ ...good, maxConcurrentPerSite: 0 })).toEqual(['maxConcurrentPerSite']);
    expect(fields({ ...good, maxConcurrentPerSite: '10%' })).toEqual(['maxConcurrentPerSite']);
    // A pivot does not read sites.
    const pivot = { name: 'p', selector: { sites: ['edge-1'] }, source: {}, target: { plane: 'b' } };
    expect(validatePivotInput(pivot)).toMatchObject({ ok: false, errors: [{ field: 'selector.sites' }] });
  });

  it('refuses a site that is not configured, naming it and the accepted ones', () => {
    expect(fleetSiteErrors({ sites: ['default', 'edge-1'] }, ['default', 'edge-1', 'edge-2'])).toEqual([]);
    expect(fleetSiteErrors({ sites: ['edge-1', 'edge-9'] }, ['default', 'edge-1', 'edge-2'])).toEqual([
      { field: 'selector.sites[1]', reason: '"edge-9" is not a configured site; the sites are "default", "edge-1", "edge-2" (the operator configures them in METALFLOW_SITES_FILE)' },
    ]);
    // No sites file: the default site alone.
    expect(fleetSiteErrors({ sites: ['edge-1'] }, [])[0]!.reason).toContain('the sites are "default"');
    expect(fleetSiteErrors({}, [])).toEqual([]);
    // A moveSite fleet names the site each host moves to: a configured one too.
    expect(fleetSiteErrors({}, ['default', 'edge-1'], { kind: 'moveSite', site: 'edge-1' })).toEqual([]);
    expect(fleetSiteErrors({}, ['default', 'edge-1'], { kind: 'moveSite', site: 'edge-9' })).toEqual([
      { field: 'operation.site', reason: '"edge-9" is not a configured site; the sites are "default", "edge-1" (the operator configures them in METALFLOW_SITES_FILE)' },
    ]);
  });

  it('reads sites only when it selects by them or caps them', () => {
    expect(fleetUsesSites({ selector: { namespace: 'lab' } })).toBe(false);
    expect(fleetUsesSites({ selector: { sites: ['edge-1'] } })).toBe(true);
    expect(fleetUsesSites({ selector: { namespace: 'lab' }, maxConcurrentPerSite: 2 })).toBe(true);
  });
});

describe('selection by site', () => {
  const host = (site?: string) => ({ ref: { namespace: 'lab', name: 'h' }, provisioningState: 'available', bmcType: 'redfish', ...(site ? { site } : {}) });

  it('picks the hosts of the named sites; a host with no site is of the default site', () => {
    expect(selectionMatches(host('edge-1'), { sites: ['edge-1'] })).toBe(true);
    expect(selectionMatches(host('edge-2'), { sites: ['edge-1'] })).toBe(false);
    expect(selectionMatches(host(), { sites: ['default'] })).toBe(true);
    expect(selectionMatches(host(), { sites: ['edge-1'] })).toBe(false);
    expect(selectionMatches(host('edge-1'), { namespace: 'other', sites: ['edge-1'] })).toBe(false);
  });

  it("asks visibility for the named sites' hosts and for those whose run has not indexed a site", () => {
    expect(hostListClauses({ namespace: 'lab', sites: ['default', 'edge-1'] })).toEqual([
      `WorkflowType = 'hostWorkflow'`,
      `MetalflowHostNamespace = 'lab'`,
      `(MetalflowSite = 'default' OR MetalflowSite = 'edge-1' OR MetalflowSite IS NULL)`,
    ]);
    expect(hostListClauses({ namespace: 'lab' })).toEqual([`WorkflowType = 'hostWorkflow'`, `MetalflowHostNamespace = 'lab'`]);
  });
});

/** Hosts by site, in selection order, with their outcomes. */
function plan(sites: string[], outcome: FleetHostOutcome = 'pending') {
  return { sites, hosts: sites.map(() => ({ outcome })) };
}

/** Runs the budget as the fleet workflow does: start while allowed, then let `finish` hosts end, until none is left. */
function simulate(sites: string[], perSite: number | undefined, limit: number, finish: (inFlight: number[]) => number[]) {
  const { hosts } = plan(sites);
  const budget = new SiteBudget(hosts, sites, perSite);
  const peaks = new Map<string, number>();
  const startOrder: number[] = [];
  let peakAll = 0;
  for (let round = 0; hosts.some((h) => h.outcome !== 'succeeded'); round += 1) {
    if (round > 1000) throw new Error('no progress');
    for (;;) {
      const inFlight = hosts.filter((h) => h.outcome === 'inFlight').length;
      if (inFlight >= limit) break;
      const i = budget.next(hosts, hosts.length);
      if (i === undefined) break;
      hosts[i]!.outcome = 'inFlight';
      budget.started(i);
      startOrder.push(i);
    }
    const flying = hosts.flatMap((h, i) => (h.outcome === 'inFlight' ? [i] : []));
    peakAll = Math.max(peakAll, flying.length);
    for (const [site, n] of budget.inFlight(hosts)) peaks.set(site, Math.max(peaks.get(site) ?? 0, n));
    for (const i of finish(flying)) hosts[i]!.outcome = 'succeeded';
  }
  return { peaks: Object.fromEntries(peaks), peakAll, startOrder };
}

describe('the per-site budget', () => {
  // 3 sites x 4 hosts, interleaved as a sorted selection may put them.
  const sites = ['a', 'b', 'a', 'c', 'a', 'b', 'a', 'c', 'b', 'b', 'c', 'c'];

  it('never has more than the cap of one site in flight, while the other sites go on', () => {
    // One host at a time finishes (the oldest): the sites' caps stay filled.
    const run = simulate(sites, 2, 100, (flying) => flying.slice(0, 1));
    expect(run.peaks).toEqual({ a: 2, b: 2, c: 2 });
    expect(run.peakAll).toBe(6);
    expect(run.startOrder.slice(0, 6)).toEqual([0, 1, 2, 3, 5, 7]);
    expect([...run.startOrder].sort((x, y) => x - y)).toEqual(sites.map((_, i) => i));
  });

  it('without a cap starts hosts in selection order up to the overall limit, as a fleet always did', () => {
    const run = simulate(sites, undefined, 5, (flying) => flying.slice(0, 1));
    expect(run.startOrder).toEqual(sites.map((_, i) => i));
    expect(run.peakAll).toBe(5);
    // Nothing holds a site back: three of a's four hosts at once.
    expect(run.peaks.a).toBe(3);
  });

  it('keeps to the overall limit too', () => {
    expect(simulate(sites, 2, 3, (flying) => flying).peakAll).toBe(3);
  });

  it('starts nothing past the wave end, and counts hosts a previous run had in flight', () => {
    const hosts = ['a', 'a', 'b', 'b'].map(() => ({ outcome: 'pending' as FleetHostOutcome }));
    hosts[0]!.outcome = 'inFlight';
    hosts[1]!.outcome = 'inFlight';
    const budget = new SiteBudget(hosts, ['a', 'a', 'b', 'b'], 2);
    // Site a is full with the carried hosts; b's first host is past a wave ending at 2.
    expect(budget.next(hosts, 2)).toBeUndefined();
    expect(budget.next(hosts, 4)).toBe(2);
    expect(budget.inFlight(hosts)).toEqual(new Map([['a', 2]]));
    hosts[0]!.outcome = 'succeeded';
    expect(budget.inFlight(hosts)).toEqual(new Map([['a', 1]]));
    // What the estimate of the end counts with: two sites open, at 2 each.
    expect(budget.concurrency(hosts, 100)).toBe(4);
    expect(budget.concurrency(hosts, 3)).toBe(3);
  });

  it('is no limit across sites when maxConcurrent is unset and each site has a cap', () => {
    expect(concurrencyLimit(undefined, 30, 4)).toBe(30);
    expect(concurrencyLimit(undefined, 30)).toBe(1);
    expect(concurrencyLimit(5, 30, 4)).toBe(5);
  });

  it("counts each site's hosts by outcome, a selection without sites as the default site", () => {
    const { hosts } = plan(['a', 'b', 'a'], 'succeeded');
    hosts[2]!.outcome = 'failed';
    expect(countsBySite(hosts, ['a', 'b', 'a'])).toMatchObject({ a: { succeeded: 1, failed: 1 }, b: { succeeded: 1 } });
    expect(selectionSites(undefined, 2)).toEqual(['default', 'default']);
  });
});

describe('sites carried to the next run', () => {
  it("reads back each selected host's site, and a selection without sites as it was", () => {
    const at = '2026-12-01T00:00:00.000Z';
    const ref = (name: string) => ({ namespace: 'lab', name });
    const s: FleetState = {
      selection: { at, hosts: [{ ref: ref('h1'), provisioningState: 'available', bmcType: 'redfish', site: 'edge-1' }, { ref: ref('h2'), provisioningState: 'available', bmcType: 'redfish', site: 'default' }], missing: [] },
      hosts: [{ ref: ref('h1'), outcome: 'inFlight', startedAt: at }, { ref: ref('h2'), outcome: 'pending' }],
      runs: 1,
    };
    expect(unpackFleetState(JSON.parse(JSON.stringify(packFleetState(s))))).toEqual(s);
    const without: FleetState = { ...s, selection: { ...s.selection!, hosts: s.selection!.hosts.map(({ site: _site, ...h }) => h) } };
    expect(unpackFleetState(JSON.parse(JSON.stringify(packFleetState(without))))).toEqual(without);
  });
});

describe('the selection activity', () => {
  /**
   * A Temporal client answering what the selection asks: visibility's list (h1 indexed at edge-1, h2 by a
   * run that never indexed its site) and each host's describe and view query. Only for what the stack
   * cannot show: every run of the current code indexes its site.
   */
  function client(listed: string[]) {
    const attrs: Record<string, Record<string, unknown>> = {
      h1: { [SEARCH_ATTRIBUTES.site.name]: ['edge-1'] },
      h2: {},
      h3: { [SEARCH_ATTRIBUTES.site.name]: ['default'] },
    };
    const sites: Record<string, string | undefined> = { h1: 'edge-1', h2: 'edge-2', h3: undefined };
    const queried: string[] = [];
    const fake = {
      workflow: {
        async *list({ query }: { query: string }) {
          listed.push(query);
          for (const name of ['h1', 'h2', 'h3']) {
            yield {
              workflowId: `host/lab/${name}`,
              runId: 'r',
              status: { name: 'RUNNING' },
              startTime: new Date(0),
              searchAttributes: { MetalflowHostNamespace: ['lab'], MetalflowHostName: [name], MetalflowProvisioningState: ['available'], MetalflowBmcType: ['redfish'], ...attrs[name] },
            };
          }
        },
        getHandle(id: string) {
          const name = id.split('/').at(-1)!;
          return {
            describe: async () => ({ runId: 'r', historyLength: 10, status: { name: 'RUNNING' } }),
            query: async () => {
              queried.push(name);
              return { spec: { bmc: { address: `redfish://192.0.2.1/redfish/v1/Systems/${name}` }, ...(sites[name] ? { site: sites[name] } : {}) }, status: { provisioning: { state: 'available' } }, managedBy: undefined };
            },
          };
        },
      },
    };
    return { client: fake as unknown as Client, queried };
  }

  it("reads from its view the site of a host whose run has not indexed one, and only then", async () => {
    const listed: string[] = [];
    const { client: c, queried } = client(listed);
    const activities = createFleetActivities({ client: c, sites: ['default', 'edge-1', 'edge-2'] });
    const picked = await activities.selectFleetHosts({ namespace: 'lab', sites: ['edge-2'] });
    expect(listed[0]).toContain('MetalflowSite IS NULL');
    // h2's run indexed no site: its view says edge-2. h1 and h3 are known from visibility: not asked.
    expect(queried).toEqual(['h2']);
    expect(picked.hosts).toEqual([{ ref: { namespace: 'lab', name: 'h2' }, provisioningState: 'available', bmcType: 'redfish', site: 'edge-2' }]);

    const capped = await activities.selectFleetHosts({ namespace: 'lab' }, { sites: true });
    expect(capped.hosts.map((h) => [h.ref.name, h.site])).toEqual([['h1', 'edge-1'], ['h2', 'edge-2'], ['h3', 'default']]);
    // A fleet that neither selects nor caps by site reads no view and records no site.
    queried.length = 0;
    const plain = await activities.selectFleetHosts({ namespace: 'lab' });
    expect(queried).toEqual([]);
    expect(plain.hosts.every((h) => h.site === undefined)).toBe(true);
  });

  it('refuses a site the worker does not know, as a bad input', async () => {
    const { client: c } = client([]);
    const err = await createFleetActivities({ client: c, sites: ['default', 'edge-1'] })
      .selectFleetHosts({ sites: ['edge-7'] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect(err).toMatchObject({ type: 'InvalidFleetInput', nonRetryable: true, message: 'selector.sites[0]: "edge-7" is not a configured site; the sites are "default", "edge-1" (the operator configures them in METALFLOW_SITES_FILE)' });
  });
});
