/** `npm run bench:at-rest`: its options and the figures it prints, without a stack. */
import { describe, expect, it } from 'vitest';
import { defaultRecoveryTimeoutSeconds, parseAtRestOptions } from '../../bench/at-rest-options';
import { cpuPercentOfACore, kubeRates, nodesCreated, perMinute, registeredAt, reregistrationFigures } from '../../bench/at-rest-figures';
import type { RecordedRequest } from '../../bench/support/ironic-proxy';
import { floorBeside } from '../../bench/rereg-floor';

const HELP = new URL('../../bench/at-rest.ts', import.meta.url);
const parse = (...argv: string[]) => parseAtRestOptions(argv, HELP);

describe('bench:at-rest options', () => {
  it('enrols 200 hosts through the API and rests 180 s unless told otherwise; --driver k8s through BareMetalHosts', () => {
    expect(parse()).toEqual({
      driver: 'api',
      hosts: 200,
      restSeconds: 180,
      concurrency: 50,
      sentinelSeconds: 30,
      powerCheckSeconds: 300,
      keepStack: false,
      loseIronicDb: false,
      recoveryTimeoutSeconds: 400,
      floorHosts: 20,
      floorConcurrency: 4,
    });
    // The re-registration floor: at most the fleet's hosts.
    expect(parse('--driver', 'k8s', '--hosts', '5', '--rest-seconds', '30', '--lose-ironic-db')).toMatchObject({ driver: 'k8s', hosts: 5, restSeconds: 30, loseIronicDb: true, floorHosts: 5 });
    expect(parse('--lose-ironic-db', '--floor-hosts', '0', '--floor-concurrency', '2')).toMatchObject({ floorHosts: 0, floorConcurrency: 2 });
  });

  it('gives the recovery more time at fleet scale, and takes a timeout of its own', () => {
    expect(defaultRecoveryTimeoutSeconds(5)).toBe(300);
    expect(parse('--hosts', '1000', '--lose-ironic-db').recoveryTimeoutSeconds).toBe(2000);
    expect(parse('--lose-ironic-db', '--recovery-timeout-seconds', '90').recoveryTimeoutSeconds).toBe(90);
  });

  it('refuses a driver it has no round for, naming the option and what it takes', () => {
    expect(() => parse('--driver', 'fleet')).toThrow('--driver: must be api or k8s (hosts enrolled through the HTTP API, or as BareMetalHosts through the controller), got "fleet"');
  });

  it('refuses a number out of range or not whole, naming the option and the range', () => {
    expect(() => parse('--hosts', '0')).toThrow('--hosts: must be a whole number from 1 to 10000, got "0"');
    expect(() => parse('--rest-seconds', '5')).toThrow('--rest-seconds: must be a whole number from 10 to 86400, got "5"');
    expect(() => parse('--concurrency', '2.5')).toThrow('--concurrency: must be a whole number from 1 to 1000, got "2.5"');
    expect(() => parse('--sentinel-seconds', '')).toThrow('--sentinel-seconds: must be a whole number from 0 to 86400, got ""');
    expect(() => parse('--lose-ironic-db', '--recovery-timeout-seconds', 'soon')).toThrow('--recovery-timeout-seconds: must be a whole number from 10 to 86400, got "soon"');
  });

  it('refuses an unknown option with the list of those it takes', () => {
    expect(() => parse('--hostz', '5')).toThrow(/Unknown option '--hostz'.*; accepted: --driver api\|k8s, --hosts N/);
  });

  it('refuses a recovery timeout without the loss, and a loss nothing at rest would notice', () => {
    expect(() => parse('--recovery-timeout-seconds', '90')).toThrow('--recovery-timeout-seconds: bounds the recovery after --lose-ironic-db; give --lose-ironic-db too, or leave it out');
    expect(() => parse('--floor-hosts', '5')).toThrow('--floor-hosts: sets the re-registration floor run after --lose-ironic-db; give --lose-ironic-db too, or leave it out');
    expect(() => parse('--lose-ironic-db', '--sentinel-seconds', '0', '--power-check-seconds', '0')).toThrow(/--lose-ironic-db: with --sentinel-seconds 0 and --power-check-seconds 0 nothing checks the hosts at rest/);
    // Either check alone notices: the sentinel's list, or each host's own read.
    expect(parse('--lose-ironic-db', '--sentinel-seconds', '0', '--power-check-seconds', '60')).toMatchObject({ sentinelSeconds: 0, powerCheckSeconds: 60 });
  });
});

const req = (r: Partial<RecordedRequest> & Pick<RecordedRequest, 'method' | 'path'>): RecordedRequest => ({ body: '', at: 0, ...r });
const create = (mark: string, at: number, status = 201): RecordedRequest =>
  req({ method: 'POST', path: '/v1/nodes', body: JSON.stringify({ name: mark.replace('/', '~'), extra: { metalflow_host: mark } }), at, status, answeredAt: at + 50 });

describe('bench:at-rest figures', () => {
  it('takes a host as registered again at the answer to the first node create Ironic accepted with its mark', () => {
    const got = nodesCreated([
      create('ns/h-0000', 1_000, 503),
      create('ns/h-0000', 2_000),
      create('ns/h-0000', 3_000),
      create('ns/h-0001', 2_500, 409),
      // Not answered yet, another kind of request, a body without a mark.
      { ...create('ns/h-0002', 2_600), status: undefined, answeredAt: undefined },
      req({ method: 'POST', path: '/v1/nodes/abc/ports', body: '{"extra":{"metalflow_host":"ns/h-0003"}}', at: 1, status: 201 }),
      req({ method: 'POST', path: '/v1/nodes', body: '{"name":"other"}', at: 1, status: 201 }),
    ]);
    expect([...got]).toEqual([['ns/h-0000', 2_050]]);
    // Kept across looks: a later look adds the hosts answered since.
    expect([...nodesCreated([create('ns/h-0002', 2_600)], got)]).toEqual([['ns/h-0000', 2_050], ['ns/h-0002', 2_650]]);
  });

  it('needs every sign of the registration (in Kubernetes mode the object\'s new node ID too), at the latest of them', () => {
    expect(registeredAt([2_000])).toBe(2_000);
    expect(registeredAt([2_000, 3_500])).toBe(3_500);
    expect(registeredAt([2_000, undefined])).toBeUndefined();
  });

  it('prints max, p50 and p95 seconds from Ironic answering again, how many made the 60 s target, and who is missing', () => {
    const back = 10_000;
    const at = new Map([['a', 14_000], ['b', 30_000], ['c', 75_000], ['d', 9_000]]);
    expect(reregistrationFigures(['a', 'b', 'c', 'd', 'e'], at, back)).toEqual({
      hosts: 5,
      reregistered: 4,
      targetSeconds: 60,
      withinTarget: 3,
      seconds: { max: 65, p50: 4, p95: 65 },
      missing: ['e'],
    });
    expect(reregistrationFigures(['a'], new Map(), back)).toEqual({ hosts: 1, reregistered: 0, targetSeconds: 60, withinTarget: 0, missing: ['a'] });
  });

  it('gives rates per minute and CPU as a share of a core, without the bench and, in Kubernetes mode, without the absent API', () => {
    expect(perMinute(3, 90)).toBe(2);
    expect(perMinute(5, 0)).toBe(0);
    expect(cpuPercentOfACore({ temporal: 1.8, ironic: 0.9, worker: 0.45, api: 0.3, bench: 5 }, 90)).toEqual({ temporal: 2, ironic: 1, worker: 0.5, api: 0.3 });
    expect(cpuPercentOfACore({ temporal: 0, ironic: 0, worker: 0, api: 0, bench: 0, controller: 0.9, apiserver: 1.8, etcd: 0.09 }, 90)).toEqual({
      temporal: 0,
      ironic: 0,
      worker: 0,
      controller: 1,
      apiserver: 2,
      etcd: 0.1,
    });
  });

  it("gives the API server's requests per minute, the status writes and Events among them (a refused write is none)", () => {
    expect(kubeRates({ 'PUT leases': 60, 'GET leases': 30, 'PATCH baremetalhosts/status': 9, 'PATCH baremetalhosts/status 409': 3, 'POST events': 6 }, 30)).toEqual({
      requestsPerMinute: 216,
      statusWritesPerMinute: 18,
      eventsPerMinute: 12,
      requestsPerMinuteByKind: { 'PUT leases': 120, 'GET leases': 60, 'PATCH baremetalhosts/status': 18, 'PATCH baremetalhosts/status 409': 6, 'POST events': 12 },
    });
  });
});

describe('the re-registration floor beside the fleet', () => {
  const phase = (cpu: number, requests: number) => ({ seconds: 1, requests: requests * 10, requestsPerHost: requests, ironicCpuSeconds: cpu * 10, ironicCpuSecondsPerHost: cpu });
  const floor = { hosts: 10, concurrency: 4, pollMs: 250, register: phase(0.1, 6), adopt: phase(0.05, 4) };
  it("gives Ironic's CPU for the whole fleet from the floor's per host, its share of the 60 s target, and metalflow over the floor", () => {
    expect(floorBeside(floor, { ironicCpuSecondsPerHost: 0.3, ironicRequestsPerHost: 9, targetSeconds: 60 }, 200)).toEqual({
      metalflowOverFloorCpu: 3,
      metalflowOverFloorRequests: 1.5,
      fleetIronicCpuSeconds: 20,
      fleetShareOfTargetPercent: 33,
    });
  });
  it('gives the fleet figure alone without a loss measured', () => {
    expect(floorBeside(floor, undefined, 100)).toEqual({ fleetIronicCpuSeconds: 10, fleetShareOfTargetPercent: 17 });
  });
});
