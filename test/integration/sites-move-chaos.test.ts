/**
 * Moving hosts between sites under SIGKILL (docs/sites.md, "Moving a
 * registered host between sites"): the central worker and both sites' workers
 * are real processes (`npm run worker`, `npm run worker -- --site FROM|TO`,
 * the test bundle), each site has its own Ironic behind a recording proxy
 * (FROM: the test stack's; TO: scripts/stack.sh on its own port and state
 * folder). HOSTS hosts provisioned at FROM are moved to TO at once, and:
 *
 * 1. once TO's Ironic has adopted each host's new node and before any answer
 *    reaches TO's worker (the node created at the target, the source node
 *    not yet deleted), the central worker, TO's worker and FROM's worker are
 *    SIGKILLed; the answers are lost with them;
 * 2. the central and TO's workers come back; the moves reach the release at
 *    FROM, whose worker is still dead: the hosts wait, showing
 *    `siteUnreachable` for FROM, and nothing is sent elsewhere;
 * 3. FROM's worker comes back, and is SIGKILLed again once FROM's Ironic has
 *    deleted the first old node (its answer lost); it comes back once more.
 *
 * Then every host is `provisioned` at TO, powered on as before, on a node
 * that exists only in TO's Ironic; neither Ironic saw a deploy or a power
 * change; per host, TO created one node and sent `manage` and `adopt` once,
 * FROM saw one maintenance hold and one successful node delete.
 *
 * Heavy tier only (several process starts and a second Ironic): `npm run
 * chaos -- --scenario site-move` runs it with METALFLOW_SITE_MOVE_CHAOS_HOSTS.
 * The attempts a killed worker held are given up by the server at once
 * (test/support/lost-attempts.ts), not at their timeouts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IronicClient } from '../../clients/ironic/client';
import { REPO_ROOT } from '../../config/env';
import type { HostRef } from '../../model/host';
import type { HostView } from '../../contracts/host';
import { hostWorkflowId, ironicNodeName } from '../../model/host-ref';
import { IronicProxy, isDeploy, isPowerChange, type RecordedRequest } from '../../bench/support/ironic-proxy';
import { FAST_HOST_OPTIONS, randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';
import { IRONIC_URL, TEMPORAL_ADDRESS, WORKFLOW_BUNDLE_PATH } from '../support/env';
import { ownIronic, type OwnIronic } from '../support/own-ironic';
import { unusedPort } from '../support/ports';
import { processArgs } from '../support/process-bundles';
import { TEST_FETCH_ENV } from '../support/fetch-policy';
import { expireLostAttempts } from '../support/lost-attempts';
import { provisionVerb } from '../k8s/pivot-figures';

const HOSTS = Number(process.env.METALFLOW_SITE_MOVE_CHAOS_HOSTS ?? '2');
const NS = uniq('site-move-chaos');
const FROM = uniq('from');
const TO = uniq('to');
const key = randomBytes(32);
const deployment = uniq('mf-site-move-chaos');
let h: Harness;
let toIronic: OwnIronic;
const proxies: Record<string, IronicProxy> = {};
let sitesFile = '';
type Kind = 'central' | 'from' | 'to';
const running: Partial<Record<Kind, ChildProcess>> = {};
const kills: string[] = [];

beforeAll(async () => {
  toIronic = ownIronic('test-sites-move-chaos-to', await unusedPort());
  [h] = await Promise.all([
    startHarness({ startWorker: false, secretKey: key, sites: [FROM, TO], hostOptions: { ...FAST_HOST_OPTIONS, siteWatchSeconds: 2, powerCheckSeconds: 3600 } }),
    toIronic.start(),
  ]);
  for (const [site, url] of [[FROM, IRONIC_URL], [TO, toIronic.url]] as const) {
    proxies[site] = new IronicProxy(url);
    await proxies[site].start();
  }
  sitesFile = join(mkdtempSync(join(tmpdir(), 'mf-site-move-chaos-')), 'sites.json');
  writeFileSync(sitesFile, JSON.stringify({ sites: [{ name: FROM, ironic: { url: proxies[FROM]!.url } }, { name: TO, ironic: { url: proxies[TO]!.url } }], centralTaskQueue: h.taskQueue }));
  for (const kind of ['central', 'from', 'to'] as const) start(kind);
}, 180_000);

afterAll(async () => {
  for (const child of Object.values(running)) child?.kill('SIGKILL');
  // The harness's in-process worker was never run (the processes are the workers): run and stopped at once, so it
  // lets go of the connection the harness closes.
  if (h) {
    const ran = h.worker.run();
    h.worker.shutdown();
    await ran;
  }
  await Promise.all([h?.close(), toIronic?.stop(), ...Object.values(proxies).map((p) => p.stop())]);
});

function start(kind: Kind): ChildProcess {
  const args = kind === 'central' ? [] : ['--site', kind === 'from' ? FROM : TO];
  const child = spawn(process.execPath, [...processArgs('worker'), ...args], {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      TEMPORAL_ADDRESS,
      // The default site's Ironic: no host of this file is there.
      IRONIC_URL,
      METALFLOW_TASK_QUEUE: h.taskQueue,
      METALFLOW_SITES_FILE: sitesFile,
      METALFLOW_SECRET_DIR: h.secretDir,
      METALFLOW_SECRET_KEY: key.toString('base64'),
      METALFLOW_WORKFLOW_BUNDLE: WORKFLOW_BUNDLE_PATH,
      METALFLOW_WORKER_DEPLOYMENT: deployment,
      // No sentinel: what each Ironic is asked is the moves' alone.
      METALFLOW_POWER_SENTINEL_SECONDS: '0',
      ...TEST_FETCH_ENV,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stderr?.on('data', (d: Buffer) => process.stderr.write(`[${kind} worker ${child.pid}] ${d.toString()}`));
  running[kind] = child;
  return child;
}

/** SIGKILLs a worker and has the server give up at once the attempts it held (and its sticky workflow tasks). */
async function kill(kind: Kind, when: string, refs: HostRef[]): Promise<void> {
  const child = running[kind]!;
  child.kill('SIGKILL');
  await new Promise<void>((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve())));
  delete running[kind];
  kills.push(`${kind} worker ${when}`);
  await expireLostAttempts(h.client, child.pid!, refs.map(hostWorkflowId));
}

const view = async (ref: HostRef): Promise<HostView> => (await h.hosts.get(ref)) as HostView;
const settle = <T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 300_000) => waitFor(what, probe, { timeoutMs, intervalMs: 300 });
const atRest = (v: HostView) => v.status.provisioning.state === 'provisioned' && !v.currentOperation && !v.siteMove && v.status.operationalStatus === 'OK' && v.status.poweredOn;
const ok = (r: RecordedRequest) => r.status !== undefined && r.status < 300;

describe('moving hosts between sites under SIGKILL', () => {
  it(`moves ${HOSTS} provisioned hosts with the central worker and both sites' workers killed mid-move: no deploy, no power change, each node at the new site only, each verb once`, { timeout: 900_000 }, async () => {
    const image = { url: 'http://127.0.0.1/images/site-move-chaos.qcow2', checksum: 'e'.repeat(64), checksumType: 'sha256' as const, format: 'qcow2' as const };
    const refs = Array.from({ length: HOSTS }, (_, i) => ({ namespace: NS, name: `mover-${i}` }));
    const specOf = new Map(refs.map((ref) => [ref.name, { bmc: { address: `fake://${NS}-${ref.name}`, credentialsName: `${ref.name}-bmc` }, bootMACAddress: randomMac(), online: true, image, inspectionMode: 'disabled' as const, automatedCleaningMode: 'disabled' as const }]));
    await Promise.all(refs.map((ref) => h.hosts.put(ref, { spec: { ...specOf.get(ref.name)!, site: FROM }, credentials: { username: 'admin', password: 'pw' } })));
    const before = await Promise.all(refs.map((ref) => settle(`${ref.name} provisioned at ${FROM}`, async () => ((v) => (atRest(v) ? v : undefined))(await view(ref)))));
    const fromNodes = new Map(before.map((v, i) => [refs[i]!.name, v.status.provisioning.ID]));
    const sent = { from: proxies[FROM]!.requests.length, to: proxies[TO]!.requests.length };

    // 1. Each adoption at TO done by Ironic, its answer held back; then the three workers killed.
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    let adopted = 0;
    const adopt = (r: RecordedRequest) => provisionVerb(r) === 'adopt';
    for (let i = 0; i < HOSTS; i++) {
      proxies[TO]!.onceAnswered(adopt, () => {
        adopted++;
        return gate;
      });
    }
    await Promise.all(refs.map((ref) => h.hosts.put(ref, { spec: { ...specOf.get(ref.name)!, site: TO } })));
    await settle('every adoption done by TO\'s Ironic', async () => adopted === HOSTS);
    await kill('central', 'with the adoptions done at TO, their answers not yet back', refs);
    await kill('to', 'with its adoptions done by Ironic, their answers not yet back', refs);
    await kill('from', 'after the new nodes were made at TO, before the old ones were deleted', refs);
    open();

    // 2. The central and TO's workers back: the moves go on to the release at FROM, which is dark.
    start('central');
    start('to');
    const waiting = await Promise.all(refs.map((ref) => settle(`${ref.name} waiting for ${FROM}`, async () => ((v) => (v.siteUnreachable?.site === FROM ? v : undefined))(await view(ref)))));
    for (const v of waiting) expect(v.siteMove).toMatchObject({ from: FROM, to: TO, switched: true });
    expect(proxies[FROM]!.requests.slice(sent.from).filter((r) => r.method === 'DELETE')).toEqual([]);

    // 3. FROM back, killed again once its Ironic has deleted the first old node (the answer lost with it), back again.
    let deleted!: () => void;
    const firstDelete = new Promise<void>((resolve) => (deleted = resolve));
    const holdAnswer = new Promise<void>(() => undefined);
    proxies[FROM]!.onceAnswered((r) => r.method === 'DELETE' && /^\/v1\/nodes\/[^/]+$/.test(r.path), () => {
      deleted();
      // Never passed on: the worker that asked is killed meanwhile.
      return holdAnswer;
    });
    start('from');
    await firstDelete;
    await kill('from', "with an old node deleted by Ironic, the answer not yet back", refs);
    start('from');

    const after = await Promise.all(refs.map((ref) => settle(`${ref.name} moved to ${TO}`, async () => ((v) => (atRest(v) && v.status.provisioning.ID !== fromNodes.get(ref.name) ? v : undefined))(await view(ref)))));
    process.stderr.write(`[site-move chaos] ${HOSTS} hosts moved; kills: ${kills.join('; ')}\n`);

    const toClient = new IronicClient({ url: toIronic.url });
    const fromRequests = proxies[FROM]!.requests.slice(sent.from);
    const toRequests = proxies[TO]!.requests.slice(sent.to);
    const figures: Record<string, unknown> = {};
    for (const [i, ref] of refs.entries()) {
      const v = after[i]!;
      const fromNode = fromNodes.get(ref.name)!;
      const toNode = v.status.provisioning.ID;
      const name = ironicNodeName(ref);
      expect(v.spec?.site).toBe(TO);
      expect(v.status.provisioning.image?.url).toBe(image.url);
      expect(v.siteUnreachable).toBeUndefined();
      const moves = v.operations.filter((o) => o.seq > before[i]!.operations.at(-1)!.seq);
      expect(moves.map((o) => [o.kind, o.outcome])).toEqual([['move', 'succeeded']]);
      // The node is at TO only, active and out of maintenance.
      expect(await toClient.getNode(toNode)).toMatchObject({ provision_state: 'active', maintenance: false, name });
      expect(await h.ironic.getNode(fromNode)).toBeUndefined();
      expect(await h.ironic.getNode(name)).toBeUndefined();
      const atFrom = fromRequests.filter((r) => r.path.includes(fromNode) || r.path.includes(name) || r.body.includes(name));
      const atTo = toRequests.filter((r) => r.path.includes(toNode) || r.path.includes(name) || r.body.includes(name));
      figures[ref.name] = {
        from: {
          deploys: atFrom.filter(isDeploy).length,
          powerChanges: atFrom.filter(isPowerChange).length,
          verbs: atFrom.map(provisionVerb).filter(Boolean),
          holds: atFrom.filter((r) => r.method === 'PUT' && /\/maintenance$/.test(r.path) && ok(r)).length,
          deletes: atFrom.filter((r) => r.method === 'DELETE' && /^\/v1\/nodes\/[^/]+$/.test(r.path) && ok(r)).length,
        },
        to: {
          deploys: atTo.filter(isDeploy).length,
          powerChanges: atTo.filter(isPowerChange).length,
          verbs: atTo.map(provisionVerb).filter(Boolean).sort(),
          creates: atTo.filter((r) => r.method === 'POST' && r.path === '/v1/nodes' && ok(r)).length,
          deletes: atTo.filter((r) => r.method === 'DELETE').length,
        },
      };
    }
    process.stderr.write(`[site-move chaos] per host: ${JSON.stringify(figures)}\n`);
    for (const ref of refs) {
      expect(figures[ref.name], ref.name).toEqual({
        from: { deploys: 0, powerChanges: 0, verbs: [], holds: 1, deletes: 1 },
        to: { deploys: 0, powerChanges: 0, verbs: ['adopt', 'manage'], creates: 1, deletes: 0 },
      });
    }
  });
});
