/** `npm run bench -- --driver`: what drives the measured lifecycle (issue 11's 1,000-host comparison in two runs). */
import { describe, expect, it } from 'vitest';
import { parseOptions } from '../../bench/options';
import { countsDelta, parseRequestCounts, writesOf } from '../../bench/kube-stack';

const HELP = new URL('../../bench/run.ts', import.meta.url);
const parse = (...argv: string[]) => parseOptions(argv, HELP);

describe('bench --driver', () => {
  it('drives through the per-host API unless told otherwise, and through fleet operations when asked', () => {
    expect(parse()).toMatchObject({ driver: 'api', fleet: false });
    expect(parse('--driver', 'fleet', '--hosts', '1000', '--concurrency', '200', '--no-floor')).toMatchObject({ driver: 'fleet', hosts: 1000, floor: false });
  });

  it('runs the floor alone with --driver floor (even at --scale, which leaves the floor out otherwise), and refuses --no-floor or --fleet beside it', () => {
    expect(parse('--driver', 'floor', '--scale')).toMatchObject({ driver: 'floor', floor: true, hosts: 1000 });
    expect(() => parse('--driver', 'floor', '--no-floor')).toThrow(/--driver floor runs the floor alone/);
    expect(() => parse('--driver', 'floor', '--fleet')).toThrow(/--driver floor runs the floor alone/);
  });

  it('refuses an unknown driver and --fleet beside --driver fleet, naming the option', () => {
    expect(() => parse('--driver', 'kubectl')).toThrow('--driver must be api, fleet, floor, k8s, got "kubectl"');
    expect(() => parse('--driver', 'fleet', '--fleet')).toThrow(/--fleet .* --driver fleet/);
  });
});

describe('bench --process-bundle', () => {
  it('starts the worker or the API from a bundle when given one, through tsx otherwise, and refuses another kind', () => {
    expect(parse().processBundles).toEqual({});
    expect(parse('--process-bundle', 'worker=/x/test-worker.mjs', '--process-bundle', 'api=/x/api.mjs').processBundles).toEqual({ worker: '/x/test-worker.mjs', api: '/x/api.mjs' });
    expect(() => parse('--process-bundle', 'controller=/x/c.mjs')).toThrow('--process-bundle must be KIND=FILE with KIND one of worker, api, got "controller=/x/c.mjs"');
  });
});

describe('bench --driver k8s', () => {
  it('drives BareMetalHosts with the floor beside them, and refuses --fleet (an HTTP API lifecycle) beside it', () => {
    expect(parse('--driver', 'k8s', '--hosts', '10')).toMatchObject({ driver: 'k8s', hosts: 10, floor: true, fleet: false });
    expect(() => parse('--driver', 'k8s', '--fleet')).toThrow(/--driver k8s drives BareMetalHosts only/);
  });

  it("counts the API server's requests by kind from its own counters, the status writes and Events among them", () => {
    const metrics = (statusPatches: number, eventPosts: number) =>
      [
        '# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.',
        '# TYPE apiserver_request_total counter',
        `apiserver_request_total{code="200",component="apiserver",dry_run="",group="metal3.io",resource="baremetalhosts",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} ${statusPatches}`,
        `apiserver_request_total{code="409",component="apiserver",dry_run="",group="metal3.io",resource="baremetalhosts",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} 2`,
        `apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="events",scope="resource",subresource="",verb="POST",version="v1"} ${eventPosts}`,
        `apiserver_request_total{code="201",component="apiserver",dry_run="",group="events.k8s.io",resource="events",scope="resource",subresource="",verb="POST",version="v1"} 1`,
        'apiserver_request_total{code="0",component="apiserver",dry_run="",group="metal3.io",resource="baremetalhosts",scope="namespace",subresource="",verb="WATCH",version="v1alpha1"} 3',
        'apiserver_request_duration_seconds_count{component="apiserver",dry_run="",group="",resource="events",scope="resource",subresource="",verb="POST",version="v1"} 99',
      ].join('\n');
    const before = parseRequestCounts(metrics(10, 4));
    expect(before).toEqual({ 'PATCH baremetalhosts/status': 10, 'PATCH baremetalhosts/status 409': 2, 'POST events': 5, 'WATCH baremetalhosts 0': 3 });
    const phase = countsDelta(before, parseRequestCounts(metrics(16, 9)));
    expect(phase).toEqual({ 'PATCH baremetalhosts/status': 6, 'POST events': 5 });
    // A refused write (409) wrote nothing: not a status write.
    expect(writesOf({ ...phase, 'PATCH baremetalhosts/status 409': 2 })).toEqual({ statusWrites: 6, events: 5 });
  });
});
