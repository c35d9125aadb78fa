/** `npm run bench -- --sites N`: the option, the hosts' sites, each site's Ironic settings and figures, the report's lines, without a stack. */
import { describe, expect, it } from 'vitest';
import { MAX_SITES, parseOptions } from '../../bench/options';
import { makeHosts, PHASES, type Phase } from '../../bench/common';
import { assignSites, hostsOfSite, siteFigures, siteIronicCpuPerHost, siteIronicPort, siteNames, sitesFileContent, siteStackTarget } from '../../bench/sites';
import { BENCH_PORTS, BENCH_STACK_ENV } from '../../bench/procs';
import { evaluateTargets, formatSites, orchestrationCpu, orchestrationPerHost, type BenchResult, type CpuByProcess, type DriverFigures } from '../../bench/report';

const HELP = new URL('../../bench/run.ts', import.meta.url);
const parse = (...argv: string[]) => parseOptions(argv, HELP);

const perPhase = <T>(v: T): Record<Phase, T> => Object.fromEntries(PHASES.map((p) => [p, v])) as Record<Phase, T>;
const cpu = (c: Partial<CpuByProcess>): CpuByProcess => ({ temporal: 0, ironic: 0, worker: 0, api: 0, bench: 0, ...c });

describe('bench --sites', () => {
  it('is one site unless asked, takes 2 to 16 with the API driver or the floor alone, and refuses the rest naming the option', () => {
    expect(parse().sites).toBe(1);
    expect(parse('--hosts', '20', '--sites', '4')).toMatchObject({ sites: 4, hosts: 20, concurrency: 20, driver: 'api', floor: true });
    expect(parse('--hosts', '1000', '--concurrency', '200', '--sites', '4')).toMatchObject({ sites: 4, hosts: 1000, concurrency: 200, floor: true, idleSeconds: 60 });
    expect(parse('--driver', 'floor', '--sites', '3')).toMatchObject({ sites: 3, driver: 'floor' });
    expect(parse('--sites', '2', '--temporal', 'postgres')).toMatchObject({ sites: 2, temporal: 'postgres', workers: 2 });
    expect(() => parse('--sites', '0')).toThrow('--sites must be a positive integer, got "0"');
    expect(() => parse('--sites', String(MAX_SITES + 1))).toThrow(`--sites must be at most ${MAX_SITES}`);
    for (const [argv, named] of [
      [['--driver', 'fleet'], '--driver fleet'],
      [['--driver', 'k8s'], '--driver k8s'],
      [['--fleet'], '--fleet'],
      [['--agent'], '--agent'],
      [['--redfish'], '--redfish'],
    ] as const) {
      expect(() => parse('--sites', '4', ...argv)).toThrow(`--sites 4 spreads fake-hardware hosts driven through the per-host API (or --driver floor alone) over the sites; ${named} does not go with it yet`);
      // One site is the run it always was: every option as before.
      expect(() => parse('--sites', '1', ...argv)).not.toThrow();
    }
  });

  it('assigns the hosts round-robin, and leaves them as they were with one site', () => {
    expect(siteNames(1)).toEqual([]);
    expect(siteNames(4)).toEqual(['site-1', 'site-2', 'site-3', 'site-4']);
    const hosts = makeHosts(10);
    expect(assignSites(hosts, [])).toBe(hosts);
    const spread = assignSites(hosts, siteNames(4));
    expect(spread.map((h) => h.site)).toEqual(['site-1', 'site-2', 'site-3', 'site-4', 'site-1', 'site-2', 'site-3', 'site-4', 'site-1', 'site-2']);
    expect(spread.map((h) => h.name)).toEqual(hosts.map((h) => h.name));
    expect(hostsOfSite(spread, 'site-3').map((h) => h.name)).toEqual(['h-0002', 'h-0006']);
    // 1,000 over 4: 250 each.
    const big = assignSites(makeHosts(1000), siteNames(4));
    expect(siteNames(4).map((s) => hostsOfSite(big, s).length)).toEqual([250, 250, 250, 250]);
  });

  it("gives each site's Ironic the bench Ironic's settings, its own port above the bench Ironic's and its own state folder", () => {
    expect([0, 1, 2, 3].map(siteIronicPort)).toEqual([1, 2, 3, 4].map((i) => BENCH_PORTS.ironic + i));
    // Inside the bench's port window at any offset, below the next bench port.
    expect(siteIronicPort(MAX_SITES - 1)).toBeLessThan(BENCH_PORTS.kubeApi);
    const t = siteStackTarget('site-2', 1, '/state');
    expect(t.stateDir).toBe('/state/sites/site-2');
    expect(t.env).toEqual({ ...BENCH_STACK_ENV, METALFLOW_STATE_DIR: '/state/sites/site-2', IRONIC_PORT: String(BENCH_PORTS.ironic + 2) });
    // Ironic's own power sync interval, as the single-site bench's (what Metal3 runs), at every host count.
    expect(t.env.IRONIC_SYNC_POWER_STATE_INTERVAL).toBe(BENCH_STACK_ENV.IRONIC_SYNC_POWER_STATE_INTERVAL);
    expect(sitesFileContent([{ name: 'site-1', ironicUrl: 'http://127.0.0.1:40001' }])).toEqual({ sites: [{ name: 'site-1', ironic: { url: 'http://127.0.0.1:40001' } }] });
  });

  it("takes each site's phase time to its last host, its requests and its Ironic's CPU per host", () => {
    const f = siteFigures('site-1', 2, {
      available: { startedAt: 1000, cpu0: 10, cpu1: 14, requests: 30, reachedAt: [5000, 7000], endedAt: 9000 },
      // A host the driver did not time counts at the phase's end.
      provisioned: { startedAt: 10_000, cpu0: 14, cpu1: 20, requests: 10, reachedAt: [12_000, undefined], endedAt: 15_000 },
    });
    expect(f.phaseMs).toEqual({ available: 6000, provisioned: 5000, deprovisioned: 0, gone: 0 });
    expect(f.ironicRequestsPerHostByPhase).toEqual({ available: 15, provisioned: 5, deprovisioned: 0, gone: 0 });
    expect(f.ironicRequestsPerHost).toBe(20);
    expect(f.ironicCpuSecondsByPhase).toEqual({ available: 4, provisioned: 6, deprovisioned: 0, gone: 0 });
    expect(siteIronicCpuPerHost(f, ['available', 'provisioned'])).toBe(5);
  });

  it('counts every site worker in orchestration CPU, and prints it per host lifecycle beside "does not grow with N"', () => {
    expect(orchestrationCpu(cpu({ temporal: 1, worker: 2, api: 3, siteWorkers: 4, ironic: 100 }))).toBe(10);
    const phases = [...PHASES];
    const site = (name: string, ironicCpu: number) => siteFigures(name, 2, Object.fromEntries(phases.map((p, i) => [p, { startedAt: 0, cpu0: 0, cpu1: ironicCpu, requests: 8, reachedAt: [1000 * (i + 1), 2000 * (i + 1)], endedAt: 9000 }])));
    const driver = (siteWorkers?: number): DriverFigures => ({
      phaseMs: perPhase(2000),
      cumulativeMs: { available: 2000, provisioned: 4000, deprovisioned: 6000, gone: 8000 },
      ironicRequestsPerHost: 16,
      ironicRequestsPerHostByPhase: perPhase(4),
      ironicRequestsPerHostByKind: {},
      // Each phase: the sites' Ironics 2 s (1 + 1), the default site's 0.5 s.
      cpuSecondsByPhase: perPhase(cpu({ temporal: 0.4, worker: 0.2, api: 0.1, ironic: 2.5, ...(siteWorkers !== undefined ? { siteWorkers } : {}) })),
      bySite: [site('site-1', 1), site('site-2', 1)],
    });
    const m = driver(0.1);
    expect(orchestrationPerHost(m, phases, 4)).toEqual({
      total: expect.closeTo(0.8, 10),
      parts: [
        ['Temporal', expect.closeTo(0.4, 10)],
        ['central worker', expect.closeTo(0.2, 10)],
        ['site workers', expect.closeTo(0.1, 10)],
        ['API', expect.closeTo(0.1, 10)],
      ],
    });
    const options = { hosts: 4, concurrency: 4, redfish: false, floorPollMs: 100, idleSeconds: 5, phases, sites: 2 } as BenchResult['options'];
    const lines = formatSites({ options, metalflow: { ...m, siteWorkers: [{ site: 'site-1', peakRssMiB: 150, cpuSeconds: 0.2 }, { site: 'site-2', peakRssMiB: 160, cpuSeconds: 0.2 }] } as BenchResult['metalflow'], floor: driver() });
    expect(lines[0]).toBe('  2 sites, the hosts round-robin (site-1 2, site-2 2): each site its own Ironic and site worker; the central worker runs the host workflows');
    expect(lines).toContain('  metalflow site-1                2.0 s       4.0 s       6.0 s       8.0 s             16.0               2.00');
    expect(lines).toContain('  floor site-2                    2.0 s       4.0 s       6.0 s       8.0 s             16.0               2.00');
    expect(lines).toContain("  the default site's Ironic (no host of the run): CPU 2.0 s in metalflow's lifecycle, 2.0 s in the floor's");
    expect(lines).toContain('  site workers: site-1 CPU 0.2 s, peak RSS 150 MiB; site-2 CPU 0.2 s, peak RSS 160 MiB');
    expect(lines.at(-1)).toBe(
      '  orchestration CPU per host lifecycle: 0.80 s (Temporal 0.40 + central worker 0.20 + site workers 0.10 + API 0.10); target: does not grow with N (here N = 2; compare with the same run at --sites 1)',
    );
    // The targets say the same, and a one-site run has no such line.
    const temporal = { historyEventsPerHost: undefined, apiToFirstActivityMs: { create: {} } } as unknown as BenchResult['metalflow']['temporal'];
    const result = { options, metalflow: { ...m, temporal, worker: { peakRssMiB: 0, cpuSeconds: 0 } }, ratio: {} } as unknown as Omit<BenchResult, 'targets'>;
    const targets = evaluateTargets(result);
    expect(targets.find((t) => t.name === 'orchestration CPU per host lifecycle')?.target).toBe('<= 0.5 s (Temporal + central worker + site workers + API)');
    expect(targets.find((t) => t.name === 'orchestration CPU per host lifecycle, 2 sites')).toEqual({
      name: 'orchestration CPU per host lifecycle, 2 sites',
      target: 'does not grow with N',
      measured: '0.80 s at 2 sites',
      met: null,
      note: 'compare with the same run at --sites 1',
    });
    const single = evaluateTargets({ ...result, options: { ...options, sites: undefined } });
    expect(single.map((t) => t.name)).not.toContain('orchestration CPU per host lifecycle, 1 sites');
    expect(single.find((t) => t.name === 'orchestration CPU per host lifecycle')?.target).toBe('<= 0.5 s (Temporal + worker + API)');
  });
});
