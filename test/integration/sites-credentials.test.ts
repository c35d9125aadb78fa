/**
 * BMC credentials held at the site (docs/sites.md, *Credentials*) on the real
 * stack. Site S says `"secrets": "site"` in its sites file: its site worker is a
 * real process (`npm run worker -- --site S`) with a secret store of its own
 * (METALFLOW_SITE_SECRET_DIR), filled by the real CLI (`npm run site-secret`);
 * S has its own Ironic and its own sushy-tools Redfish BMCs, which answer 401
 * to any password but the right one. The central worker and the API (this
 * process, the harness) have the central store, which must never hold S's
 * credentials.
 *
 * - The API refuses inline credentials for S's hosts (400 naming the field,
 *   the site and the CLI), and takes a host that sends none.
 * - A host whose credentials are only in S's store registers at S, on a node of
 *   S's Ironic whose driver_info has the user (Ironic masks the password) and
 *   whose power Ironic reads and changes through the BMC with it; the central
 *   store has no such Secret.
 * - A wrong password in S's store is the BMC's 401 (so the site's store is
 *   what is read); a Secret in no store is the host's error naming S's store,
 *   and once put there with the CLI the host registers on its own.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IronicClient } from '../../clients/ironic/client';
import { LocalSecretStore } from '../../clients/secrets/local-store';
import { REPO_ROOT } from '../../config/env';
import { hostWorkflowId } from '../../model/host-ref';
import type { HostView } from '../../contracts/host';
import { FAST_HOST_OPTIONS, startHarness, uniq, waitFor, type Harness } from '../support/harness';
import { TEMPORAL_ADDRESS } from '../support/env';
import { ownIronic, type OwnIronic } from '../support/own-ironic';
import { unusedPort } from '../support/ports';
import { processArgs } from '../support/process-bundles';
import { TEST_FETCH_ENV } from '../support/fetch-policy';
import { callApi, serveApi } from '../support/api-client';
import { SiteHealthReader } from '../../control/site-health';
import { DEFAULT_SITE, siteTaskQueue } from '../../model/site';

const run = promisify(execFile);
const NS = uniq('site-creds');
const SITE = uniq('s');
const key = randomBytes(32);
const base = mkdtempSync(join(tmpdir(), 'mf-site-creds-'));
/** Site S's own store: nothing central is given this folder. */
const SITE_SECRET_DIR = join(base, 'site-secrets');
const SYSTEM = (n: number) => `/redfish/v1/Systems/6d660000-0000-4000-8000-00000000000${n}`;
let h: Harness;
let siteIronic: OwnIronic;
let siteIronicClient: IronicClient;
let siteWorker: ChildProcess | undefined;
let api: Awaited<ReturnType<typeof serveApi>>;
const output: string[] = [];

/** `npm run site-secret -- put …` on the site's machine (the password from a file, never the command line). */
async function putAtSite(name: string, username: string, password: string): Promise<string> {
  const file = join(base, `${name}.pw`);
  writeFileSync(file, `${password}\n`, { mode: 0o600 });
  const { stdout } = await run(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'scripts', 'site-secret.ts'), 'put', NS, name, '--username', username, '--password-file', file], {
    cwd: REPO_ROOT,
    env: { ...process.env, METALFLOW_SITE_SECRET_DIR: SITE_SECRET_DIR },
  });
  return stdout;
}

beforeAll(async () => {
  siteIronic = ownIronic('test-sites-credentials', await unusedPort(), { withSushy: true, syncSeconds: 5 });
  await siteIronic.start();
  siteIronicClient = new IronicClient({ url: siteIronic.url });
  h = await startHarness({ sites: [SITE], credentialSites: [SITE], secretKey: key, hostOptions: FAST_HOST_OPTIONS });
  const sitesFile = join(base, 'sites.json');
  writeFileSync(sitesFile, JSON.stringify({ sites: [{ name: SITE, ironic: { url: siteIronic.url }, secrets: 'site' }] }));
  siteWorker = spawn(process.execPath, [...processArgs('worker'), '--site', SITE], {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      TEMPORAL_ADDRESS,
      METALFLOW_TASK_QUEUE: h.taskQueue,
      METALFLOW_SITES_FILE: sitesFile,
      // The central store stays the one user data would be read from; the site's credentials are in its own.
      METALFLOW_SECRET_DIR: h.secretDir,
      METALFLOW_SECRET_KEY: key.toString('base64'),
      METALFLOW_SITE_SECRET_DIR: SITE_SECRET_DIR,
      METALFLOW_POWER_SENTINEL_SECONDS: '0',
      ...TEST_FETCH_ENV,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  for (const stream of [siteWorker.stdout, siteWorker.stderr]) stream?.on('data', (d: Buffer) => output.push(d.toString()));
  siteWorker.stderr?.on('data', (d: Buffer) => process.stderr.write(`[site worker ${siteWorker?.pid}] ${d.toString()}`));
  // GET /v1/sites as api/main.ts builds it from the sites file: each site with where its credentials are held.
  const health = new SiteHealthReader(h.client, [
    { name: DEFAULT_SITE, taskQueue: h.taskQueue, ironic: h.ironic },
    { name: SITE, taskQueue: siteTaskQueue(SITE), credentials: 'site', ironic: siteIronicClient },
  ], 0);
  api = await serveApi(h.hosts, { sites: health });
  await waitFor('the site worker up', () => Promise.resolve(output.join('').includes(`metalflow site worker of site ${SITE}`)), { timeoutMs: 90_000 });
}, 180_000);

afterAll(async () => {
  siteWorker?.kill('SIGKILL');
  await api?.app.close();
  await Promise.all([h?.close(), siteIronic?.stop()]);
});

const view = async (name: string): Promise<HostView> => (await h.hosts.get({ namespace: NS, name })) as HostView;
const path = (name: string) => `/v1/namespaces/${NS}/hosts/${name}`;
const spec = (name: string, system: number, online = false) => ({
  bmc: { address: `redfish+${siteIronic.sushyUrl}${SYSTEM(system)}`, credentialsName: `${name}-bmc` },
  online,
  inspectionMode: 'disabled',
  automatedCleaningMode: 'disabled',
  site: SITE,
});
/** What the central store holds of a Secret: read through the store, and any file of that name in its folder. */
async function central(name: string): Promise<{ read: unknown; files: string[] }> {
  const files = readdirSync(h.secretDir, { recursive: true }).map(String).filter((f) => f.includes(name));
  return { read: await new LocalSecretStore(h.secretDir, key).read(NS, name), files };
}
/** The Redfish system's power, asked of the site's BMC with the right password. */
async function bmcPower(system: number): Promise<string> {
  const r = await fetch(`${siteIronic.sushyUrl}${SYSTEM(system)}`, { headers: { authorization: `Basic ${Buffer.from('admin:password').toString('base64')}` } });
  return ((await r.json()) as { PowerState: string }).PowerState;
}

describe('a site that holds its BMC credentials', { timeout: 240_000 }, () => {
  it('the API refuses inline credentials for its hosts, naming the field, the site and the CLI; the central store gets nothing', async () => {
    const name = 'inline';
    const r = await callApi(api.base, 'PUT', path(name), { spec: spec(name, 1), credentials: { username: 'admin', password: 'password' } });
    expect(r.status).toBe(400);
    const body = JSON.stringify(r.json);
    expect(body).toContain('credentials');
    expect(body).toContain(`are not accepted for a host of site \\"${SITE}\\", which holds its BMC credentials at the site`);
    expect(body).toContain(`npm run site-secret -- put ${NS} ${name}-bmc`);
    expect(body).not.toContain('"password"');
    expect(await central(`${name}-bmc`)).toEqual({ read: undefined, files: [] });
    await expect(h.hosts.get({ namespace: NS, name })).rejects.toThrow(/does not exist/);
    expect(output.join('')).toContain(`BMC credentials from the site's own secret store ${SITE_SECRET_DIR}`);
    const sites = await callApi(api.base, 'GET', '/v1/sites');
    expect((sites.json.items as { name: string; credentials: string }[]).map((s) => [s.name, s.credentials])).toEqual([[DEFAULT_SITE, 'central'], [SITE, 'site']]);
  });

  it('a host whose credentials are only in the site\'s store registers at the site, and Ironic drives its BMC with them', async () => {
    const name = 'held';
    expect(await putAtSite(`${name}-bmc`, 'admin', 'password')).toContain(`Secret ${NS}/${name}-bmc written to the site's store ${SITE_SECRET_DIR}`);
    // No credentials in the request, and none in the central store: accepted (the API does not look for them).
    const put = await callApi(api.base, 'PUT', path(name), { spec: spec(name, 1, true) });
    expect(put.status, JSON.stringify(put.json)).toBe(201);
    const rested = await waitFor('the host available and on', async () => {
      const v = await view(name);
      return v.status.provisioning.state === 'available' && v.status.poweredOn && !v.currentOperation ? v : undefined;
    }, { timeoutMs: 120_000, intervalMs: 500 });
    expect(rested.status.errorCount).toBe(0);
    const node = await siteIronicClient.getNode(rested.status.provisioning.ID);
    expect(node?.extra.metalflow_host).toBe(`${NS}/${name}`);
    // Ironic masks the password in a GET; the user is there, and Ironic's own power reads and changes go through the BMC.
    expect(node?.driver_info).toMatchObject({ redfish_username: 'admin', redfish_password: '******' });
    expect(node?.power_state).toBe('power on');
    expect(await bmcPower(1)).toBe('On');
    // Powered off through the site's Ironic, with the password only the site holds.
    expect((await callApi(api.base, 'PUT', path(name), { spec: spec(name, 1, false) })).status).toBe(200);
    await waitFor('the host off', async () => (await view(name)).status.poweredOn === false && !(await view(name)).currentOperation, { timeoutMs: 60_000, intervalMs: 500 });
    expect((await siteIronicClient.getNode(rested.status.provisioning.ID))?.power_state).toBe('power off');
    expect(await bmcPower(1)).toBe('Off');
    expect((await siteIronicClient.getNode(rested.status.provisioning.ID))?.last_error ?? null).toBeNull();
    // The central store never held it.
    expect(await central(`${name}-bmc`)).toEqual({ read: undefined, files: [] });
  });

  it("a wrong password in the site's store is the BMC's 401; a Secret in no store names the site's store, and put there, the host registers on its own", async () => {
    const wrong = 'wrong';
    await putAtSite(`${wrong}-bmc`, 'admin', `not-the-password-${uniq('x')}`);
    expect((await callApi(api.base, 'PUT', path(wrong), { spec: spec(wrong, 2) })).status).toBe(201);
    const refused = await waitFor('a registration error', async () => {
      const v = await view(wrong);
      return v.status.errorType === 'registration error' ? v : undefined;
    }, { timeoutMs: 60_000, intervalMs: 300 });
    expect(refused.status.errorMessage).toMatch(/401|credentials/i);
    expect(refused.status.errorMessage).not.toContain('not-the-password');

    const missing = 'missing';
    expect((await callApi(api.base, 'PUT', path(missing), { spec: spec(missing, 3) })).status).toBe(201);
    const failed = await waitFor('the missing Secret as the host\'s error', async () => {
      const v = await view(missing);
      return v.status.errorMessage ? v : undefined;
    }, { timeoutMs: 60_000, intervalMs: 300 });
    expect(failed.status.errorType).toBe('registration error');
    expect(failed.status.errorMessage).toContain(`Secret ${NS}/${missing}-bmc not found in the secret store of site "${SITE}" (METALFLOW_SITE_SECRET_DIR ${SITE_SECRET_DIR})`);
    // The host waits in its error with a backoff, its workflow running: no crash loop.
    expect((await h.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name: missing })).describe()).status.name).toBe('RUNNING');
    await putAtSite(`${missing}-bmc`, 'admin', 'password');
    const registered = await waitFor('the host available once its Secret is at the site', async () => {
      const v = await view(missing);
      return v.status.provisioning.state === 'available' && !v.currentOperation ? v : undefined;
    }, { timeoutMs: 90_000, intervalMs: 500 });
    expect((await siteIronicClient.getNode(registered.status.provisioning.ID))?.extra.metalflow_host).toBe(`${NS}/${missing}`);
    for (const n of [wrong, missing]) expect(await central(`${n}-bmc`)).toEqual({ read: undefined, files: [] });
  });
});
