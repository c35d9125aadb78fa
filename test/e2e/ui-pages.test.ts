/**
 * What an operator sees in a browser, in headless Debian chromium: the
 * Temporal UI's host list (per-state links, the host columns) and one host's
 * page, and the API's fleet page. Real stack, real UI (the dev server's),
 * real API; one browser for the file. Screenshots go to test-results/screenshots.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { request } from 'undici';
import { FAST_HOST_OPTIONS, randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';
import { callApi, serveApi, writeTokenFile } from '../support/api-client';
import { Browser, browserMissing } from '../support/browser';
import { TEST_PORTS } from '../support/env';
import { hostRunMetadata, hostWorkflowStart } from '../../control/host-run';
import { applySpecUpdate } from '../../contracts/host';
import { hostRunUrl, hostStateLinks } from '../../model/temporal-ui-links';
import { FLEET_PAGE_PATH } from '../../api/fleet-page';

const missing = browserMissing();
const UI = `http://127.0.0.1:${TEST_PORTS.temporalUi}`;
/** The columns an operator adds once with the list's "Configure columns" (the UI keeps them in localStorage). */
const COLUMNS = ['Status', 'Workflow ID', 'MetalflowProvisioningState', 'MetalflowPoweredOn', 'MetalflowOperation', 'MetalflowErrorType', 'Start'];

let h: Harness;
let api: { app: FastifyInstance; base: string };
let browser: Browser;
let tokens: Record<string, string>;
const ns = uniq('ui');
const broken = { namespace: ns, name: 'ui-broken' };

beforeAll(async () => {
  if (missing) return;
  h = await startHarness({ hostOptions: FAST_HOST_OPTIONS });
  const file = writeTokenFile([
    ['ui-admin', 'admin:*'],
    ['ui-viewer', 'viewer:*'],
  ]);
  tokens = file.tokens;
  api = await serveApi(h.hosts, {
    env: { METALFLOW_API_TOKENS_FILE: file.file },
    page: { temporalUi: { url: UI, namespace: 'default' }, sites: [{ name: 'default', taskQueue: h.taskQueue }, { name: 'edge-1', taskQueue: 'site/edge-1' }] },
  });
  const admin = { token: tokens['ui-admin'] };
  // Two hosts at rest, and one whose registration keeps failing (its BMC Secret does not exist).
  const put = (name: string) =>
    callApi(api.base, 'PUT', `/v1/namespaces/${ns}/hosts/${name}`, { spec: { bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc` }, bootMACAddress: randomMac(), online: true }, credentials: { username: 'admin', password: 'pw' } }, admin);
  for (const name of ['ui-a', 'ui-b']) expect((await put(name)).status).toBe(201);
  await h.client.workflow.executeUpdateWithStart(applySpecUpdate, {
    args: [{ bmc: { address: 'fake://ui-broken', credentialsName: 'ui-broken-bmc-secret' }, bootMACAddress: randomMac(), online: true }],
    startWorkflowOperation: hostWorkflowStart(broken, h.taskQueue, FAST_HOST_OPTIONS),
  });
  await Promise.all(['ui-a', 'ui-b'].map((name) => waitFor(`${name} available`, async () => ((await h.hosts.get({ namespace: ns, name })).status.provisioning.state === 'available' ? true : undefined), { timeoutMs: 120_000 })));
  await waitFor('ui-broken failing', async () => ((await h.hosts.get(broken)).status.errorType === 'registration error' ? true : undefined), { timeoutMs: 120_000 });
  browser = await Browser.open();
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await api?.app.close();
  await h?.close();
});

describe.skipIf(missing)(`what an operator sees in a browser${missing ? ` (skipped: ${missing})` : ''}`, { timeout: 300_000 }, () => {
  it("the Temporal UI's list shows each host's state, power, operation and error; its page the current details", async () => {
    // The search attributes behind the columns and links, as the visibility store has them.
    const listed = await waitFor('the list showing the error', async () => {
      const items = (await h.hosts.list({ namespace: ns })).filter((i) => i.name === broken.name);
      return items[0]?.errorType === 'registration error' ? items[0] : undefined;
    });
    expect(listed).toMatchObject({ provisioningState: 'registering', errorType: 'registration error', poweredOn: false });

    await browser.goto(`${UI}/namespaces/default/workflows`);
    await browser.run(`localStorage.setItem('namespace-workflow-table-columns', arguments[0]);`, JSON.stringify({ default: COLUMNS.map((label, i) => ({ label, pinned: i < 2 })) }));
    const links = Object.fromEntries(hostStateLinks(UI, 'default', ns).map((l) => [l.label, l.url]));

    await browser.goto(links['available']!);
    const row = await browser.waitForText('tr', `host/${ns}/ui-a`, 'available');
    expect(row).toContain('true'); // MetalflowPoweredOn
    expect(await browser.run<string>('return document.body.textContent')).not.toContain(`host/${ns}/ui-broken`);
    await browser.screenshot('temporal-ui-list-available');

    await browser.goto(links['with an error']!);
    const failing = await browser.waitForText('tr', `host/${ns}/ui-broken`, 'registration error', 'registering');
    expect(failing).not.toContain(`host/${ns}/ui-a`);
    await browser.screenshot('temporal-ui-list-error');

    // One host's page: its summary (set at start) and current details (the worker answers the UI's metadata
    // query), on the User Metadata tab, rendered as markdown in same-origin frames.
    await browser.goto(hostRunUrl(UI, 'default', broken));
    await browser.waitForText('a', 'User Metadata');
    await browser.click('a', 'User Metadata');
    await browser.waitForText('iframe', hostRunMetadata(broken).staticSummary);
    await browser.waitForText('iframe', 'registering', 'power off', 'registration error', 'not found');
    await browser.screenshot('temporal-ui-host-page');
  });

  it('the fleet page lists hosts, fleet operations with progress and sites, for a viewer token, with no console error', async () => {
    const name = uniq('ui-reboot');
    const admin = { token: tokens['ui-admin'] };
    const selector = { hosts: ['ui-a', 'ui-b'].map((n) => ({ namespace: ns, name: n })) };
    const started = await callApi(api.base, 'POST', '/v1/fleet-operations', { name, operation: { kind: 'reboot', mode: 'hard' }, selector }, admin);
    expect(started.status, started.text).toBe(201);
    await waitFor('the reboot done', async () => {
      const p = (await callApi(api.base, 'GET', `/v1/fleet-operations/${name}`, undefined, admin)).json;
      return p.phase === 'completed' && p.counts.succeeded === 2 ? true : undefined;
    }, { timeoutMs: 120_000 });

    // A second one paused after its first host: still running, so the page reads its progress.
    const held = uniq('ui-held');
    expect((await callApi(api.base, 'POST', '/v1/fleet-operations', { name: held, operation: { kind: 'reboot', mode: 'hard' }, selector, maxConcurrent: 1 }, admin)).status).toBe(201);
    const paused = (await callApi(api.base, 'POST', `/v1/fleet-operations/${held}/pause`, {}, admin)).json;

    // The page is a shell: served without a token, with the Host check and a strict CSP.
    const shell = await request(`${api.base}${FLEET_PAGE_PATH}`);
    expect(shell.statusCode).toBe(200);
    expect(String(shell.headers['content-security-policy'])).toMatch(/default-src 'none'; script-src 'sha256-/);
    await shell.body.text();
    const rebound = await request(`${api.base}${FLEET_PAGE_PATH}`, { headers: { host: 'attacker.example' } });
    expect(rebound.statusCode).toBe(403);
    await rebound.body.text();

    await browser.goto(`${api.base}${FLEET_PAGE_PATH}`);
    // A retry of this test finds the tab's token of the first attempt.
    await browser.run('sessionStorage.clear()');
    await browser.goto(`${api.base}${FLEET_PAGE_PATH}?again`);
    await browser.waitForText('#login-reason', 'no credentials');
    // Drained: the refused calls above logged their 401s.
    await browser.console();
    await browser.goto(`${api.base}${FLEET_PAGE_PATH}#token=${tokens['ui-viewer']}`);
    // The token left the address bar for the tab's storage.
    expect(await browser.run<string>('return location.href')).not.toContain('token');
    const a = await browser.waitForText(`tr[data-host="${ns}/ui-a"]`, 'available', 'on');
    expect(a).toContain(`host/${ns}/ui-a`);
    await browser.waitForText(`tr[data-host="${ns}/ui-broken"]`, 'registering', 'off', 'registration error');
    await browser.waitForText(`tr[data-fleet="${name}"]`, 'reboot', 'completed', '2 done');
    // Paused before it finished (the usual case): `<done> of 2 done`; else it completed first.
    if (paused.phase === 'paused') await browser.waitForText(`tr[data-fleet="${held}"]`, 'paused', 'of 2 done');
    else await browser.waitForText(`tr[data-fleet="${held}"]`, '2 done');
    await browser.waitForText('#sites tr', 'edge-1', 'site/edge-1');
    const href = await browser.run<string>(`return document.querySelector('tr[data-host="${ns}/ui-a"] a').href`);
    expect(href).toBe(hostRunUrl(UI, 'default', { namespace: ns, name: 'ui-a' }));
    await browser.screenshot('fleet-page');
    // Fleet operations other files left running on the shared test server have no worker to answer the page's
    // progress query: their failed calls are theirs. Every other error counts.
    const foreign = (m: string) => m.includes('/v1/fleet-operations/') && !m.includes(`/v1/fleet-operations/${held}`);
    expect((await browser.console()).filter((e) => e.level === 'SEVERE' && !foreign(e.message))).toEqual([]);
    await callApi(api.base, 'POST', `/v1/fleet-operations/${held}/cancel`, {}, admin);
  });
});
