import { describe, expect, it } from 'vitest';
import type { KubeNode } from '../../clients/kubernetes/nodes';
import { loadHealthCheckConfig } from '../../config/health-check';
import { decide, episodeOf, groupRoom, hostOfNode, indexHosts, remediationName, unhealthySince, type Candidate, type HostFacts } from '../../k8s/controller/health-policy';

const host = (name: string, over: Partial<HostFacts> = {}): HostFacts => ({
  key: `ns/${name}`,
  namespace: 'ns',
  name,
  uid: `uid-${name}`,
  labels: {},
  annotations: {},
  ...over,
});
const node = (over: { name?: string; uid?: string; labels?: Record<string, string>; providerID?: string; ready?: string; at?: string } = {}): KubeNode => ({
  metadata: { name: over.name ?? 'n1', uid: over.uid ?? 'node-uid', resourceVersion: '1', labels: over.labels ?? {} },
  spec: over.providerID ? { providerID: over.providerID } : {},
  status: over.ready ? { conditions: [{ type: 'Ready', status: over.ready, lastTransitionTime: over.at ?? '2026-01-01T00:00:00Z' }] } : {},
});
const LIMITS = { notReadySeconds: 300, maxRemediating: 10, groupMaxPercent: 50 };
const T0 = Date.parse('2026-01-01T00:00:00Z');
const sick = (key: string, group: string, over: Partial<Candidate> = {}): Candidate => ({ key, group, since: T0, episode: `e-${key}`, active: false, eligible: true, ...over });

describe('health check: which Node is which host', () => {
  const hosts = [host('a', { consumerRef: { kind: 'Metal3Machine', name: 'm3m-a' } }), host('b', { consumerRef: { kind: 'Node', name: 'worker-b' } }), host('c')];
  const index = indexHosts(hosts);
  it('CAPM3 label, providerID (both formats, the consumer must match), consumerRef kind Node, metalflow.io/host', () => {
    expect(hostOfNode(node({ labels: { 'metal3.io/uuid': 'uid-c' } }), index)?.name).toBe('c');
    expect(hostOfNode(node({ providerID: 'metal3://uid-b' }), index)?.name).toBe('b');
    expect(hostOfNode(node({ providerID: 'metal3://ns/a/m3m-a' }), index)?.name).toBe('a');
    expect(hostOfNode(node({ providerID: 'metal3://ns/a/other' }), index)).toBeUndefined();
    expect(hostOfNode(node({ name: 'worker-b' }), index)?.name).toBe('b');
    expect(hostOfNode(node({ labels: { 'metalflow.io/host': 'ns.c' } }), index)?.name).toBe('c');
    expect(hostOfNode(node({ labels: { 'metalflow.io/host': 'other.c' } }), index)).toBeUndefined();
  });
});

describe('health check: episodes', () => {
  it('NotReady or Unknown since the transition; Ready or unreported is healthy', () => {
    expect(unhealthySince(node({ ready: 'False' }))).toBe(T0);
    expect(unhealthySince(node({ ready: 'Unknown' }))).toBe(T0);
    expect(unhealthySince(node({ ready: 'True' }))).toBeUndefined();
    expect(unhealthySince(node())).toBeUndefined();
  });
  it('one name per Node object and transition, a valid object name', () => {
    const e = episodeOf(node({ ready: 'False' }));
    expect(episodeOf(node({ ready: 'False' }))).toBe(e);
    expect(episodeOf(node({ ready: 'False', at: '2026-01-01T00:10:00Z' }))).not.toBe(e);
    expect(episodeOf(node({ ready: 'False', uid: 'other' }))).not.toBe(e);
    const long = remediationName(`${'a'.repeat(240)}.b`, e);
    expect(long.length).toBeLessThanOrEqual(253);
    expect(long).toMatch(/^a+-health-[0-9a-f]{10}$/);
  });
});

describe('health check: limits', () => {
  const now = T0 + 301_000;
  it('only past the threshold; says when the next is due', () => {
    const d = decide([sick('ns/a', 'r1'), sick('ns/b', 'r2', { since: T0 + 100_000 })], LIMITS, now);
    expect(d.start.map((c) => c.key)).toEqual(['ns/a']);
    expect(d.nextDue).toBe(T0 + 400_000);
  });
  it('a group\'s share holds when a whole rack goes NotReady; others are deferred with the reason', () => {
    const rack = ['h1', 'h2', 'h3', 'h4'].map((k, i) => sick(`ns/${k}`, 'rack-7', { since: T0 - i }));
    const d = decide(rack, LIMITS, now);
    expect(d.start.map((c) => c.key)).toEqual(['ns/h4', 'ns/h3']);
    expect(d.deferred).toHaveLength(2);
    expect(d.deferred[0]!.reason).toMatch(/group "rack-7" has 2 of its 4 host\(s\)/);
  });
  it('a host given up on holds its room while its Node stays NotReady in that episode; room frees when it comes back', () => {
    const given = sick('ns/h1', 'rack', { remediatedEpisode: 'e-ns/h1' });
    const rest = [sick('ns/h2', 'rack'), sick('ns/h3', 'rack'), sick('ns/h4', 'rack')];
    expect(decide([given, ...rest], { ...LIMITS, groupMaxPercent: 25 }, now).start).toEqual([]);
    const back = { ...given, since: undefined, episode: undefined };
    expect(decide([back, ...rest], { ...LIMITS, groupMaxPercent: 25 }, now).start.map((c) => c.key)).toEqual(['ns/h2']);
  });
  it('the global limit, running remediations count, ineligible and already-remediated hosts never start', () => {
    const d = decide(
      [sick('ns/a', 'g1', { active: true, since: undefined }), sick('ns/b', 'g2'), sick('ns/c', 'g3'), sick('ns/d', 'g4', { eligible: false }), sick('ns/e', 'g5', { remediatedEpisode: 'e-ns/e' })],
      { ...LIMITS, maxRemediating: 3 },
      now,
    );
    expect(d.start.map((c) => c.key)).toEqual(['ns/b']);
    expect(d.deferred.map((x) => x.candidate.key)).toEqual(['ns/c']);
    expect(d.deferred[0]!.reason).toMatch(/METALFLOW_HEALTH_CHECK_MAX_REMEDIATING=3/);
  });
  it('a group of one may be remediated', () => {
    expect(groupRoom(1, 25)).toBe(1);
    expect(groupRoom(10, 25)).toBe(2);
  });
});

describe('health check: configuration', () => {
  it('off by default; defaults; a bad value names its variable', () => {
    expect(loadHealthCheckConfig({})).toBeUndefined();
    expect(loadHealthCheckConfig({ METALFLOW_HEALTH_CHECK: 'true' })).toMatchObject({ notReadySeconds: 300, maxRemediating: 2, groupMaxPercent: 25, timeoutSeconds: 600, retryLimit: 1 });
    expect(() => loadHealthCheckConfig({ METALFLOW_HEALTH_CHECK: 'yes' })).toThrow(/METALFLOW_HEALTH_CHECK must be/);
    expect(() => loadHealthCheckConfig({ METALFLOW_HEALTH_CHECK: 'true', METALFLOW_HEALTH_CHECK_GROUP_MAX_PERCENT: '0' })).toThrow(/GROUP_MAX_PERCENT must be a whole number from 1 to 100/);
    expect(() => loadHealthCheckConfig({ METALFLOW_HEALTH_CHECK: 'true', METALFLOW_HEALTH_CHECK_TIMEOUT_SECONDS: '99' })).toThrow(/TIMEOUT_SECONDS/);
    expect(() => loadHealthCheckConfig({ METALFLOW_HEALTH_CHECK: 'true', METALFLOW_HEALTH_CHECK_NODE_HANDLING: 'Drain' })).toThrow(/OutOfServiceTaint, Delete/);
  });
});
