/**
 * The controller's built-in health check on a real API server (docs/remediation.md): a Node NotReady past the threshold gets exactly one
 * HostRemediation, also across a controller restart; a whole rack NotReady at
 * once gets no more than the group's share, the rest are deferred with an
 * Event and picked up when a host comes back. The test plays the kubelet on
 * real Node objects (no kubelet runs here).
 */
import { describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { uniq, waitFor } from '../support/harness';
import { kubectl } from './kube-harness';
import { fakeHostSpec, hostDoc, secretDoc } from './manifests';
import { useShimSuite } from './shim-harness';
import { kubeletRuns, setReady as setNodeReady, type PlayedMachine as Machine } from './play-kubelet';

const setReady = (m: Machine, status: 'True' | 'False'): void => setNodeReady(m.node, m.systemUUID, status);

const NS = uniq('mf-health');
const TASK_QUEUE = uniq('tq-health');
const RACK = 'example.com/rack';
const CONTROLLER_ENV = {
  METALFLOW_HEALTH_CHECK: 'true',
  METALFLOW_HEALTH_CHECK_NOT_READY_SECONDS: '3',
  METALFLOW_HEALTH_CHECK_MAX_REMEDIATING: '10',
  METALFLOW_HEALTH_CHECK_GROUP_LABEL: RACK,
  METALFLOW_HEALTH_CHECK_GROUP_MAX_PERCENT: '50',
};
const suite = useShimSuite(NS, TASK_QUEUE, CONTROLLER_ENV);
const LONG = 240_000;

interface HostRemediation {
  metadata: { name: string; labels?: Record<string, string> };
  spec: { hostName: string; nodeName?: string; strategy: { retryLimit?: number; timeoutSeconds?: number } };
  status?: { outcome?: string };
}

const apply = (doc: Record<string, unknown>) => kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify(doc) });
const bmhUid = (name: string): string => (JSON.parse(kubectl(['get', 'bmh', name, '-n', NS, '-o', 'json']).stdout) as { metadata: { uid: string } }).metadata.uid;
const remediations = (): HostRemediation[] => (JSON.parse(kubectl(['get', 'hostremediations', '-n', NS, '-o', 'json']).stdout) as { items: HostRemediation[] }).items;
const remediationsOf = (hosts: string[]): HostRemediation[] => remediations().filter((r) => hosts.includes(r.spec.hostName));
const deferredEvents = (): string[] =>
  (JSON.parse(kubectl(['get', 'events', '-n', NS, '--field-selector', 'reason=RemediationDeferred', '-o', 'json']).stdout) as { items: { involvedObject: { name: string } }[] }).items.map(
    (e) => e.involvedObject.name,
  );

function createHost(name: string, rack: string, over: Record<string, unknown> = {}): void {
  apply(secretDoc(`${name}-bmc-secret`, { username: 'admin', password: 'x' }));
  apply({ ...hostDoc(name, fakeHostSpec(name, { externallyProvisioned: true, ...over })), metadata: { name, labels: { [RACK]: rack } } });
}

/** A Node Ready, found by one of the ways the health check knows (its labels or providerID). */
function registerNode(name: string, found: { labels?: Record<string, string>; providerID?: string }): Machine {
  const m = { node: name, systemUUID: randomUUID() };
  kubectl(['create', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name, labels: found.labels ?? {} }, spec: found.providerID ? { providerID: found.providerID } : {} }) });
  setReady(m, 'True');
  return m;
}

const SINGLE = uniq('single');
const RACK_HOSTS = [uniq('q1'), uniq('q2'), uniq('q3'), uniq('q4')];

describe('built-in health check on a real API server', () => {
  const machines = new Map<string, Machine>();

  it('hosts come up, each with a Node found one of the documented ways', () => {
    createHost(SINGLE, 'r1');
    const [q1, q2, q3, q4] = RACK_HOSTS as [string, string, string, string];
    createHost(q1, 'r2');
    createHost(q2, 'r2');
    createHost(q3, 'r2');
    createHost(q4, 'r2', { consumerRef: { kind: 'Node', name: `${q4}-node` } });
    for (const h of [SINGLE, ...RACK_HOSTS]) {
      kubectl(['wait', '-n', NS, '--for=jsonpath={.status.provisioning.state}=externally provisioned', `bmh/${h}`, '--timeout=300s']);
    }
    machines.set(SINGLE, registerNode(`${SINGLE}-node`, { labels: { 'metal3.io/uuid': bmhUid(SINGLE) } }));
    machines.set(q1, registerNode(`${q1}-node`, { labels: { 'metal3.io/uuid': bmhUid(q1) } }));
    machines.set(q2, registerNode(`${q2}-node`, { labels: { 'metalflow.io/host': `${NS}.${q2}` } }));
    machines.set(q3, registerNode(`${q3}-node`, { providerID: `metal3://${bmhUid(q3)}` }));
    machines.set(q4, registerNode(`${q4}-node`, {}));
  }, 600_000);

  it('a Node NotReady past the threshold gets exactly one HostRemediation, also after a controller restart', async () => {
    const m = machines.get(SINGLE)!;
    expect(remediationsOf([SINGLE])).toEqual([]);
    setReady(m, 'False');
    await waitFor('a HostRemediation', async () => remediationsOf([SINGLE]).length > 0, { timeoutMs: LONG, intervalMs: 500 });
    const [r] = remediationsOf([SINGLE]);
    expect(r!.spec).toMatchObject({ hostName: SINGLE, nodeName: m.node, strategy: { type: 'Reboot', retryLimit: 1, timeoutSeconds: 600 } });
    expect(r!.metadata.name).toMatch(new RegExp(`^${SINGLE}-health-[0-9a-f]{10}$`));

    // SIGKILL: the new controller takes the lease, lists everything again and looks at the same episode.
    suite.shim.running('controller')!.kill('SIGKILL');
    const next = suite.shim.startController(CONTROLLER_ENV);
    await waitFor('the new controller\'s first look', async () => /health check: \d+ hosts/.test(suite.shim.output(next)), { timeoutMs: LONG, intervalMs: 500 });
    expect(remediationsOf([SINGLE]).map((x) => x.metadata.name)).toEqual([r!.metadata.name]);
    expect(suite.shim.output(next)).not.toMatch(new RegExp(`${SINGLE}: .*created`));
  }, LONG * 2);

  it('a whole rack NotReady at once: the group\'s share (50%: 2 of 4) is remediated, the others deferred and picked up when room frees', async () => {
    for (const h of RACK_HOSTS) setReady(machines.get(h)!, 'False');
    await waitFor('two deferred', async () => deferredEvents().filter((n) => RACK_HOSTS.includes(n)).length >= 2, { timeoutMs: LONG, intervalMs: 500 });
    const first = remediationsOf(RACK_HOSTS);
    expect(first).toHaveLength(2);
    const deferred = deferredEvents().filter((n) => RACK_HOSTS.includes(n));
    expect(new Set(deferred).size).toBe(2);
    for (const r of first) expect(deferred).not.toContain(r.spec.hostName);

    // One remediated host comes back (its kubelet runs again): its remediation succeeds, and a deferred host gets its turn.
    const back = first[0]!.spec.hostName;
    await kubeletRuns(
      machines.get(back)!,
      waitFor('a third HostRemediation', async () => remediationsOf(RACK_HOSTS).length === 3, { timeoutMs: LONG, intervalMs: 500 }),
    );
    const hosts = remediationsOf(RACK_HOSTS).map((r) => r.spec.hostName);
    expect(new Set(hosts).size).toBe(3);
    expect(deferred).toContain(hosts.find((h) => !first.some((r) => r.spec.hostName === h)));
    expect(remediationsOf([back])[0]!.status?.outcome).toBe('succeeded');
  }, LONG * 2);
});
