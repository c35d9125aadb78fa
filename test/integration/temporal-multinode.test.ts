/**
 * Sites on a multi-node Temporal cluster (docs/sites.md, "Scale path"): two
 * Temporal server nodes on one PostgreSQL (scripts/temporal-pg.sh with
 * TEMPORAL_PG_NODES=2, each node all four services, one ring per service), two
 * central worker processes on the same task queue, each connected to a
 * different node's frontend, and the worker of a second site (an Ironic of its
 * own) as a process of its own. Six hosts, three at the default site (the test
 * stack's Ironic) and three at the second site, go through create → provision →
 * deprovision → delete; node 0 is SIGKILLed while their deploys are in flight.
 *
 * Both nodes are in every ring before the kill, and node 0 owns history shards
 * of hosts of both sites (host names are picked so); once the kill is noticed,
 * node 1 owns every shard. Every host finishes; at its own site's Ironic each
 * host was deployed once and deprovisioned once, and the other site's Ironic
 * never saw it (both Ironics behind a recording proxy). The central worker
 * whose frontend died is stranded: the other one carries on (the attempts the
 * stranded worker held are given up by the server at once instead of at their
 * heartbeat timeout, test/support/lost-attempts.ts).
 *
 * Heavy tier only (METALFLOW_TEST_HEAVY=1): a PostgreSQL and two Temporal
 * servers of its own, on ports from METALFLOW_TEST_TEMPORAL_PG_PORT_BASE
 * (21540: PostgreSQL there, the nodes' ports the 19 above), state in
 * .state/test-temporal-pg-nodes, removed at the end. The first run builds
 * Temporal server (scripts/temporal-pg.sh install: minutes).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HostService } from '../../api/host-service';
import { ApiError } from '../../api/api-error';
import { LocalSecretStore } from '../../clients/secrets/local-store';
import { REPO_ROOT } from '../../config/env';
import type { HostRef } from '../../model/host';
import { hostWorkflowId, ironicNodeName } from '../../model/host-ref';
import { DEFAULT_SITE } from '../../model/site';
import type { HostView } from '../../contracts/host';
import { IronicProxy, isDeploy, type RecordedRequest } from '../../bench/support/ironic-proxy';
import { provisionVerb } from '../k8s/pivot-figures';
import { FAST_HOST_OPTIONS, randomMac, uniq, waitFor } from '../support/harness';
import { HEAVY } from '../support/heavy';
import { IRONIC_URL, WORKFLOW_BUNDLE_PATH } from '../support/env';
import { TEST_FETCH_ENV } from '../support/fetch-policy';
import { expireLostAttempts } from '../support/lost-attempts';
import { ownIronic, type OwnIronic } from '../support/own-ironic';
import { unusedPort } from '../support/ports';
import { processArgs } from '../support/process-bundles';

const run = promisify(execFile);
const { TaskQueueType } = proto.temporal.api.enums.v1;

const BASE = Number(process.env.METALFLOW_TEST_TEMPORAL_PG_PORT_BASE ?? 21540);
const STATE = join(REPO_ROOT, '.state', 'test-temporal-pg-nodes');
/** More shards than the profile's 4, so that each node owns some (fixed when the cluster is created: a fresh one per run). */
const SHARDS = 8;
const PG_ENV = { TEMPORAL_PG_STATE_DIR: STATE, TEMPORAL_PG_PORT_BASE: String(BASE), TEMPORAL_PG_NODES: '2', TEMPORAL_PG_HISTORY_SHARDS: String(SHARDS) };
const frontend = (node: number) => `127.0.0.1:${BASE + 10 * node + 1}`;
/** Each node's gRPC port per service (scripts/temporal-pg.sh: node K's are node 0's plus 10*K). */
const SERVICE_OFFSET = { frontend: 1, history: 3, matching: 4, worker: 5 } as const;
const TDBG = join(REPO_ROOT, '.cache', 'temporal-pg', 'v1.32.0', 'tdbg');

const SITE = uniq('edge');
const NS = uniq('multinode');

/** scripts/temporal-pg.sh on the test's cluster, its output in the error when it fails. */
async function temporalPg(cmd: string): Promise<string> {
  try {
    return (await run('bash', [join(REPO_ROOT, 'scripts', 'temporal-pg.sh'), cmd], { env: { ...process.env, ...PG_ENV }, maxBuffer: 16 << 20 })).stdout;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`scripts/temporal-pg.sh ${cmd} failed: ${e.stderr || e.stdout || e.message}`);
  }
}

/** The server's admin CLI (built by scripts/temporal-pg.sh) against a node's frontend; its JSON answer. */
async function tdbg(node: number, ...args: string[]): Promise<Record<string, unknown>> {
  const { stdout } = await run(TDBG, ['--address', frontend(node), '--namespace', 'default', ...args]);
  return JSON.parse(stdout) as Record<string, unknown>;
}

/** The history host (its gRPC address) that owns a workflow's shard, as node `via` sees it. */
const shardOwnerOf = async (via: number, workflowId: string): Promise<string> => String((await tdbg(via, 'history-host', 'describe', '--workflow-id', workflowId)).address);
const shardOwner = async (via: number, shard: number): Promise<string> => String((await tdbg(via, 'history-host', 'describe', '--shard-id', String(shard))).address);
const historyHost = (node: number) => `127.0.0.1:${BASE + 10 * node + SERVICE_OFFSET.history}`;

/** `scripts/temporal-pg.sh members`: role → the members' gRPC addresses, as the gossip of the first live node has them. */
async function members(): Promise<Record<string, string[]>> {
  const out = await temporalPg('members');
  return Object.fromEntries(
    out
      .trim()
      .split('\n')
      .map((line) => line.trim().split(/\s+/))
      .map(([role, ...ids]) => [role!, ids.sort()]),
  );
}
const ringOf = (nodes: number[]) =>
  Object.fromEntries(Object.entries(SERVICE_OFFSET).map(([role, off]) => [role, nodes.map((k) => `127.0.0.1:${BASE + 10 * k + off}`).sort()]));

const key = randomBytes(32);
const secretDir = mkdtempSync(join(tmpdir(), 'mf-multinode-'));
const taskQueue = uniq('tq-multinode');
const deployment = uniq('mf-multinode');
let siteIronic: OwnIronic | undefined;
const proxies: Record<string, IronicProxy> = {};
const workers: Record<'centralA' | 'centralB' | 'site', ChildProcess | undefined> = { centralA: undefined, centralB: undefined, site: undefined };
let connection: Connection | undefined;
let client: Client;
let hosts: HostService;

function startWorker(name: keyof typeof workers, node: number, sitesFile: string, site?: string): ChildProcess {
  const child = spawn(process.execPath, [...processArgs('worker'), ...(site ? ['--site', site] : [])], {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: frontend(node),
      TEMPORAL_NAMESPACE: 'default',
      IRONIC_URL: proxies[DEFAULT_SITE]!.url,
      METALFLOW_TASK_QUEUE: taskQueue,
      METALFLOW_SITES_FILE: sitesFile,
      METALFLOW_SECRET_DIR: secretDir,
      METALFLOW_SECRET_KEY: key.toString('base64'),
      METALFLOW_WORKFLOW_BUNDLE: WORKFLOW_BUNDLE_PATH,
      METALFLOW_WORKER_DEPLOYMENT: deployment,
      ...TEST_FETCH_ENV,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr?.on('data', (d: Buffer) => process.stderr.write(`[${name} ${child.pid}] ${d.toString()}`));
  workers[name] = child;
  return child;
}

const timings: Record<string, number> = {};
const mark = (what: string, since: number) => {
  timings[what] = Math.round((Date.now() - since) / 100) / 10;
};

describe.runIf(HEAVY)('sites on a 2-node Temporal cluster', { timeout: 300_000 }, () => {
  beforeAll(async () => {
    const t0 = Date.now();
    // A cluster an earlier run left (killed before its afterAll): stopped and gone, so the shard count is this run's.
    await temporalPg('stop').catch(() => undefined);
    rmSync(STATE, { recursive: true, force: true });
    await temporalPg('install');
    siteIronic = ownIronic('test-multinode-site', await unusedPort());
    proxies[DEFAULT_SITE] = new IronicProxy(IRONIC_URL);
    await Promise.all([temporalPg('start'), siteIronic.start(), proxies[DEFAULT_SITE].start()]);
    proxies[SITE] = new IronicProxy(siteIronic.url);
    await proxies[SITE].start();
    mark('cluster, site Ironic up', t0);
    const sitesFile = join(secretDir, 'sites.json');
    writeFileSync(sitesFile, JSON.stringify({ sites: [{ name: SITE, ironic: { url: proxies[SITE].url } }] }));
    // Central worker A through node 0's frontend, B through node 1's; the site's worker and this test's client through node 1's.
    startWorker('centralA', 0, sitesFile);
    startWorker('centralB', 1, sitesFile);
    startWorker('site', 1, sitesFile, SITE);
    connection = await Connection.connect({ address: frontend(1) });
    client = new Client({ connection, namespace: 'default' });
    hosts = new HostService({ client, secrets: new LocalSecretStore(secretDir, key), taskQueue, hostOptions: FAST_HOST_OPTIONS, sites: [SITE] });
  }, 1_800_000);

  afterAll(async () => {
    for (const w of Object.values(workers)) if (w && w.exitCode === null && w.signalCode === null) w.kill('SIGKILL');
    hosts?.close();
    await connection?.close().catch(() => undefined);
    await Promise.all([temporalPg('stop').catch(() => undefined), siteIronic?.stop(), ...Object.values(proxies).map((p) => p.stop())]);
    rmSync(STATE, { recursive: true, force: true });
    rmSync(secretDir, { recursive: true, force: true });
    console.log(`[multinode] phase times (s): ${JSON.stringify(timings)}`);
  });

  it('every host of both sites finishes its lifecycle through a node SIGKILLed mid-provision, each deploy once at its own Ironic', async () => {
    const t0 = Date.now();
    // One ring per service with both nodes in it, as node 0's gossip sees it.
    expect(await members()).toEqual(ringOf([0, 1]));
    // The history shards are spread over both nodes.
    const owners = await Promise.all(Array.from({ length: SHARDS }, (_, i) => shardOwner(1, i + 1)));
    expect(new Set(owners)).toEqual(new Set([historyHost(0), historyHost(1)]));
    // Both central workers poll the task queue (through their own frontends).
    await waitFor(
      'both central workers polling',
      async () => {
        const res = await client.workflowService.describeTaskQueue({ namespace: 'default', taskQueue: { name: taskQueue }, taskQueueType: TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW });
        const ids = new Set((res.pollers ?? []).map((p) => p.identity?.split('@')[0]));
        return ids.has(String(workers.centralA!.pid)) && ids.has(String(workers.centralB!.pid));
      },
      { timeoutMs: 180_000, intervalMs: 500 },
    );
    mark('workers polling', t0);

    // Host names whose workflows' shards are on node 0 and on node 1, at each site: the kill hits hosts of both sites.
    const pick = async (site: string, prefix: string): Promise<Array<{ ref: HostRef; site: string; node: string }>> => {
      const byNode = new Map<string, HostRef>();
      let third: { ref: HostRef; node: string } | undefined;
      for (let i = 0; (byNode.size < 2 || !third) && i < 64; i++) {
        const ref = { namespace: NS, name: `${prefix}-${i}` };
        const node = await shardOwnerOf(1, hostWorkflowId(ref));
        if (!byNode.has(node)) byNode.set(node, ref);
        else third ??= { ref, node };
      }
      expect([...byNode.keys()].sort()).toEqual([historyHost(0), historyHost(1)]);
      return [...[...byNode].map(([node, ref]) => ({ ref, site, node })), { ...third!, site }];
    };
    const all = [...(await pick(DEFAULT_SITE, 'd')), ...(await pick(SITE, 's'))];

    const macs = new Map(all.map((x) => [x.ref.name, randomMac()]));
    const spec = (x: (typeof all)[number], image: boolean) => ({
      bmc: { address: `fake://${NS}-${x.ref.name}`, credentialsName: `${x.ref.name}-bmc` },
      bootMACAddress: macs.get(x.ref.name)!,
      online: true,
      inspectionMode: 'disabled' as const,
      automatedCleaningMode: 'disabled' as const,
      ...(x.site !== DEFAULT_SITE ? { site: x.site } : {}),
      ...(image ? { image: { url: 'http://127.0.0.1/images/multinode.qcow2', checksum: 'e'.repeat(64), format: 'qcow2' as const } } : {}),
    });
    const view = async (ref: HostRef) => (await hosts.get(ref)) as HostView;
    const allReach = (what: string, ok: (v: HostView) => boolean) =>
      Promise.all(all.map((x) => waitFor(`${x.ref.name} ${what}`, async () => ((v) => (ok(v) ? v : undefined))(await view(x.ref)), { timeoutMs: 150_000, intervalMs: 500 })));
    const atRest = (state: string) => (v: HostView) => v.status.provisioning.state === state && !v.currentOperation && v.status.operationalStatus === 'OK';

    let t = Date.now();
    await Promise.all(all.map((x) => hosts.put(x.ref, { spec: spec(x, false), credentials: { username: 'admin', password: 'pw' } })));
    const registered = await allReach('available', atRest('available'));
    mark('create -> available', t);
    const nodeIds = new Map(all.map((x, i) => [x.ref.name, registered[i]!.status.provisioning.ID]));
    expect([...nodeIds.values()].every((id) => id.length > 0)).toBe(true);

    // Provision: the deploys held 3 s at both Ironics, and node 0 killed while they are in flight.
    for (const p of Object.values(proxies)) p.hold(isDeploy, 3000);
    t = Date.now();
    await Promise.all(all.map((x) => hosts.put(x.ref, { spec: spec(x, true) })));
    await waitFor('a deploy in flight at each Ironic', async () => Object.values(proxies).every((p) => p.count(isDeploy) >= 1), { timeoutMs: 90_000, intervalMs: 100 });
    const notYet = (await Promise.all(all.map((x) => view(x.ref)))).filter((v) => v.status.provisioning.state !== 'provisioned');
    expect(notYet.length).toBeGreaterThan(0);
    const node0 = Number(readFileSync(join(STATE, 'run', 'temporal.pid'), 'utf8').trim());
    process.kill(-node0, 'SIGKILL');
    const killedAt = Date.now();
    // Node 1's gossip drops node 0 from every ring, and node 1 takes over node 0's shards.
    await waitFor('node 0 out of every ring', async () => JSON.stringify(await members()) === JSON.stringify(ringOf([1])), { timeoutMs: 90_000, intervalMs: 500 });
    mark('kill -> node 0 out of the rings', killedAt);
    await waitFor(
      'node 1 owning every shard',
      async () => (await Promise.all(Array.from({ length: SHARDS }, (_, i) => shardOwner(1, i + 1)))).every((o) => o === historyHost(1)),
      { timeoutMs: 90_000, intervalMs: 500 },
    );
    mark('kill -> node 1 owns every shard', killedAt);
    // Central worker A's frontend is gone with node 0: what it held is given up now, not at the heartbeat timeouts.
    const lost = await expireLostAttempts(client, workers.centralA!.pid!, all.map((x) => hostWorkflowId(x.ref)));
    const provisioned = await allReach('provisioned', atRest('provisioned'));
    mark('provision -> provisioned (kill included)', t);
    expect(provisioned.map((v) => v.operations.filter((o) => o.kind === 'provision').map((o) => o.outcome))).toEqual(all.map(() => ['succeeded']));

    t = Date.now();
    await Promise.all(all.map((x) => hosts.put(x.ref, { spec: spec(x, false) })));
    await allReach('deprovisioned', atRest('available'));
    mark('deprovision -> available', t);

    t = Date.now();
    await Promise.all(all.map((x) => hosts.remove(x.ref)));
    await Promise.all(
      all.map((x) =>
        waitFor(`${x.ref.name} gone`, async () => hosts.get(x.ref).then(() => undefined, (err: unknown) => (err instanceof ApiError && err.status === 404 ? true : undefined)), {
          timeoutMs: 120_000,
          intervalMs: 500,
        }),
      ),
    );
    mark('delete -> gone', t);

    // At each host's own Ironic: one deploy, one deprovision; the other site's Ironic never saw it.
    const about = (x: (typeof all)[number]) => (r: RecordedRequest) => {
      const name = ironicNodeName(x.ref);
      const node = /^\/v1\/nodes\/([^/?]+)/.exec(r.path)?.[1];
      return (node !== undefined && [nodeIds.get(x.ref.name), name, encodeURIComponent(name)].includes(node)) || (r.method === 'POST' && r.path === '/v1/nodes' && r.body.includes(`"${name}"`));
    };
    const verbs = (site: string, x: (typeof all)[number]) => proxies[site]!.requests.filter(about(x)).map(provisionVerb).filter(Boolean);
    for (const x of all) {
      const own = verbs(x.site, x);
      expect({ host: x.ref.name, active: own.filter((v) => v === 'active').length, deleted: own.filter((v) => v === 'deleted').length }).toEqual({ host: x.ref.name, active: 1, deleted: 1 });
      const other = x.site === DEFAULT_SITE ? SITE : DEFAULT_SITE;
      expect(proxies[other]!.requests.filter(about(x))).toEqual([]);
    }
    console.log(`[multinode] hosts on node 0's shards: ${all.filter((x) => x.node === historyHost(0)).map((x) => `${x.ref.name}@${x.site}`).join(', ')}; attempts central worker A held at the kill: ${lost}`);
  });
});
