/**
 * The chaos suite's own logic, shown able to fail: a second deploy or reboot
 * on one node is a duplicate unless Ironic failed the first in between; a
 * node re-created after a database loss counts apart (a reboot served by
 * powering such a node on is not missing); a planted secret is
 * found in a log (across read chunks) and only in the run's part of it; the
 * fault plan is the same for a seed and places the database loss mid-run.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { countDeploys, countReboots, secretsInLogs, type CountInput } from '../../bench/chaos/checks';
import { planFaults } from '../../bench/chaos/faults';
import type { HostRecord } from '../../bench/chaos/fleet';
import type { ChaosHost } from '../../bench/chaos/hosts';
import { IronicWatch } from '../../bench/chaos/ironic-watch';
import { FAULT_KINDS } from '../../bench/chaos/options';
import { Random } from '../../bench/chaos/random';
import type { RecordedRequest } from '../../bench/support/ironic-proxy';

const host: ChaosHost = {
  index: 0,
  name: 'c-0000',
  namespace: 'chaos-x-api',
  mode: 'api',
  kind: 'fake',
  key: 'chaos-x-api/c-0000',
  spec: { online: true },
  image: { url: 'http://127.0.0.1/i.qcow2', format: 'qcow2' },
  password: 'pw',
};

const deploy = (node: string, at: number, injected?: RecordedRequest['injected']): RecordedRequest => ({
  method: 'PUT',
  path: `/v1/nodes/${node}/states/provision`,
  body: '{"target": "active"}',
  at,
  ...(injected ? { injected } : {}),
});
const power = (node: string, target: string, at: number): RecordedRequest => ({ method: 'PUT', path: `/v1/nodes/${node}/states/power`, body: JSON.stringify({ target }), at });

function input(requests: RecordedRequest[], states: Record<string, { state: string; at: number }[]>, record: Partial<HostRecord['steps']> = {}): CountInput {
  const ironic = new IronicWatch('http://127.0.0.1:9', ['chaos-x-api']);
  for (const [uuid, s] of Object.entries(states)) ironic.nodes.set(uuid, { uuid, host: host.key, states: s });
  const steps = { provisioned: { requestedAt: 0, reachedAt: 50 }, ...record };
  return {
    hosts: [host],
    records: new Map([[host.key, { key: host.key, mode: 'api', kind: 'fake', steps, outcome: 'done' }]]),
    ironicRequests: requests,
    bmcRequests: [],
    ironic,
    endedAt: 1000,
    workflowIds: [],
    resent: new Map(),
  };
}

describe('deploys counted per node', () => {
  it('finds a second deploy on one node, and not one Ironic failed first or one the proxy answered itself', () => {
    const active = { n1: [{ state: 'deploying', at: 10 }, { state: 'active', at: 30 }] };
    expect(countDeploys(input([deploy('n1', 10)], active))).toMatchObject({ once: 1, twice: [] });
    expect(countDeploys(input([deploy('n1', 10), deploy('n1', 20)], active)).twice).toHaveLength(1);
    expect(countDeploys(input([deploy('n1', 5, 'status 409'), deploy('n1', 10)], active))).toMatchObject({ once: 1, twice: [] });
    expect(countDeploys(input([deploy('n1', 10, 'no answer, forwarded'), deploy('n1', 20)], active)).twice).toHaveLength(1);
    const failedBetween = { n1: [{ state: 'deploying', at: 10 }, { state: 'deploy failed', at: 12 }, { state: 'active', at: 30 }] };
    expect(countDeploys(input([deploy('n1', 10), deploy('n1', 20)], failedBetween))).toMatchObject({ twice: [], retriedAfterFailure: [host.key] });
  });

  it('counts a node re-created after a database loss apart, and a provisioned host with no deploy as missing', () => {
    const two = { n1: [{ state: 'active', at: 10 }], n2: [{ state: 'active', at: 40 }] };
    expect(countDeploys(input([deploy('n1', 10), deploy('n2', 40)], two))).toMatchObject({ once: 1, twice: [] });
    expect(countDeploys(input([], two)).missing).toEqual([host.key]);
  });
});

describe('reboots counted per node during the reboot step', () => {
  const states = { n1: [{ state: 'active', at: 0 }] };
  const step = { rebooted: { requestedAt: 100, reachedAt: 200 } };
  it('counts power-offs inside the step only, and finds two', () => {
    const once = [power('n1', 'power off', 50), power('n1', 'power off', 120), power('n1', 'power on', 130), power('n1', 'power off', 300)];
    expect(countReboots(input(once, states, step))).toMatchObject({ once: 1, twice: [] });
    const twice = [power('n1', 'power off', 120), power('n1', 'power on', 130), power('n1', 'power off', 140)];
    expect(countReboots(input(twice, states, step)).twice).toHaveLength(1);
    expect(countReboots(input([power('n1', 'power on', 130)], states, step)).missing).toEqual([host.key]);
  });

  it('counts no power-off as served when the node was lost and the one registered again came up off', () => {
    const relost = { n1: [{ state: 'active', at: 0 }], n2: [{ state: 'enroll', at: 150 }, { state: 'active', at: 160 }] };
    expect(countReboots(input([power('n2', 'power on', 170)], relost, step))).toMatchObject({ missing: [], servedByNewNode: [host.key] });
  });
});

describe('secrets in logs', () => {
  it('finds a planted secret across a read chunk and only after the run began', () => {
    const dir = mkdtempSync(join(tmpdir(), 'chaos-logs-'));
    const file = join(dir, 'worker.log');
    const secret = 'chaos-pw-0123456789abcdef';
    // The secret straddles the 4 MiB chunk boundary.
    writeFileSync(file, `${'x'.repeat((4 << 20) - 10)}${secret}\nold line\n`);
    expect(secretsInLogs([{ path: file, from: 0 }], [secret], () => 'the password')).toEqual([`log ${file}: the password`]);
    expect(secretsInLogs([{ path: file, from: 4 << 20 }], [secret], () => 'the password')).toEqual([]);
    expect(secretsInLogs([{ path: join(dir, 'absent.log'), from: 0 }], [secret], () => 'x')).toEqual([]);
  });
});

describe('the fault plan', () => {
  const opts = { faults: [...FAULT_KINDS], faultsPerKind: 2, pauseSeconds: [2, 20] as [number, number], blackholeSeconds: [20, 60] as [number, number] };
  it('is the same for a seed, has each kind the asked number of times, and loses the database mid-run', () => {
    const a = planFaults(opts, new Random(7));
    expect(planFaults(opts, new Random(7))).toEqual(a);
    expect(planFaults(opts, new Random(8))).not.toEqual(a);
    for (const kind of FAULT_KINDS.filter((k) => k !== 'ironic-proxy')) expect(a.filter((f) => f.kind === kind)).toHaveLength(2);
    const mid = a.filter((x) => x.kind === 'ironic-empty-db').map((f) => f.at);
    expect(mid.every((at) => at >= 0.35 && at <= 0.65)).toBe(true);
    expect(a.every((f) => f.at > 0.05 && f.at < 0.85)).toBe(true);
    expect(a.map((f) => f.at)).toEqual([...a.map((f) => f.at)].sort((x, y) => x - y));
  });
});
