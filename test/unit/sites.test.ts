/** Sites (docs/sites.md): the operator's file, `spec.site` against it, the site label, and what a site worker registers. */
import { describe, expect, it } from 'vitest';
import { loadSites, parseSites } from '../../config/sites';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_SITE, hostSiteQueue, siteErrors, type Site } from '../../model/site';
import { specWithSite } from '../../k8s/controller/bare-metal-host';
import { createSiteActivities } from '../../workers/site-activities';
import { SITE_ACTIVITIES } from '../../workflows/host/site-route';
import { siteArgument, siteToServe } from '../../workers/site-main';
import { IronicClient } from '../../clients/ironic/client';
import type { SecretReader } from '../../clients/secrets/secret-store';

const DEFAULT: Site = { name: DEFAULT_SITE, ironic: { url: 'http://127.0.0.1:6385' }, taskQueue: 'metalflow-hosts' };
const file = (sites: unknown[]) => JSON.stringify({ sites });

describe('METALFLOW_SITES_FILE', () => {
  it('gives the default site first, then each configured one on its own task queue', () => {
    const r = parseSites(file([{ name: 'edge-1', ironic: { url: 'https://10.1.0.2:6385', caFile: '/etc/ca.pem', username: 'u', passwordFile: '/etc/pw' }, dhcp: { dirs: { 'edge-1': '/var/lib/d' } }, imageCache: { dir: '/var/cache/m', port: 8082 } }]), DEFAULT);
    expect(r.names()).toEqual(['default', 'edge-1']);
    expect(r.get('edge-1')).toMatchObject({ taskQueue: 'site/edge-1', ironic: { url: 'https://10.1.0.2:6385', caFile: '/etc/ca.pem', passwordFile: '/etc/pw' }, dhcp: { dirs: { 'edge-1': '/var/lib/d' } }, imageCache: { port: 8082 } });
    expect(r.get('default')).toBe(DEFAULT);
  });

  it.each([
    [[{ name: 'Edge', ironic: { url: 'http://x:1' } }], /sites\[0\]\.name.*"Edge" is not a site name/],
    [[{ name: 'default', ironic: { url: 'http://x:1' } }], /"default" is the environment's own site/],
    [[{ name: 'a', ironic: { url: 'http://x:1' } }, { name: 'a', ironic: { url: 'http://y:1' } }], /sites\[1\]\.name "a" is given twice/],
    [[{ name: 'a' }], /sites\[0\]\.ironic must be an object/],
    [[{ name: 'a', ironic: { url: 'http://x:1', password: 'p' } }], /sites\[0\]\.ironic\.password is not a site setting/],
    [[{ name: 'a', ironic: { url: 'http://x:1', caFile: '/ca.pem' } }], /must be https:\/\//],
    [[{ name: 'a', ironic: { url: 'https://x:1', username: 'u' } }], /needs username and passwordFile together/],
    [[{ name: 'a', ironic: { url: 'http://x:1' }, dhcp: { dirs: { a: 'rel/dir' } } }], /must be an absolute path/],
  ])('refuses a mistake, naming where it is: %j', (sites, message) => {
    expect(() => parseSites(file(sites), DEFAULT)).toThrow(message);
  });
});

describe('the central task queue', () => {
  const withQueue = (centralTaskQueue: unknown) => JSON.stringify({ sites: [{ name: 'edge-1', ironic: { url: 'http://x:1' } }], centralTaskQueue });
  const load = (content: string, env: Record<string, string>) => {
    const path = join(mkdtempSync(join(tmpdir(), 'mf-sites-queue-')), 'sites.json');
    writeFileSync(path, content);
    return loadSites({ ...env, METALFLOW_SITES_FILE: path }, { taskQueue: env.METALFLOW_TASK_QUEUE ?? 'metalflow-hosts', ironicUrl: 'http://127.0.0.1:6385' });
  };

  it("is the file's centralTaskQueue when it names one: any process (central or site worker, API, controller) with another stops, naming both", () => {
    expect(load(withQueue('hosts-a'), { METALFLOW_TASK_QUEUE: 'hosts-a' }).names()).toEqual(['default', 'edge-1']);
    expect(() => load(withQueue('hosts-a'), { METALFLOW_TASK_QUEUE: 'hosts-b' })).toThrow(
      'METALFLOW_SITES_FILE: centralTaskQueue is "hosts-a" but this process\'s METALFLOW_TASK_QUEUE is "hosts-b": every central worker, site worker, API and controller of these sites needs the same central task queue',
    );
    expect(() => load(withQueue('hosts-a'), {})).toThrow(/centralTaskQueue is "hosts-a" but this process's METALFLOW_TASK_QUEUE is unset, so "metalflow-hosts"/);
    expect(() => load(withQueue(''), {})).toThrow(/centralTaskQueue must be a non-empty string/);
    // A file without it checks nothing of the kind (every process still needs the same one).
    expect(load(JSON.stringify({ sites: [] }), { METALFLOW_TASK_QUEUE: 'anything' }).names()).toEqual(['default']);
  });

  it("is never a site's own queue", () => {
    expect(() => load(JSON.stringify({ sites: [{ name: 'edge-1', ironic: { url: 'http://x:1' } }] }), { METALFLOW_TASK_QUEUE: 'site/edge-1' })).toThrow(
      'METALFLOW_TASK_QUEUE "site/edge-1" is the task queue of site "edge-1" (METALFLOW_SITES_FILE), not a central one',
    );
  });
});

describe('a host\'s site', () => {
  it('is one of the configured sites; an unknown one is refused naming those accepted', () => {
    expect(siteErrors(undefined, ['default', 'edge-1'])).toEqual([]);
    expect(siteErrors('edge-1', ['default', 'edge-1'])).toEqual([]);
    expect(siteErrors('https://evil:6385', ['default', 'edge-1'])).toEqual([
      { field: 'spec.site', reason: '"https://evil:6385" is not a configured site; the sites are "default", "edge-1" (the operator configures them in METALFLOW_SITES_FILE)' },
    ]);
  });

  it("routes a host's hardware to its site's queue, the default site's to the workflow's own", () => {
    expect(hostSiteQueue(undefined)).toBeUndefined();
    expect(hostSiteQueue('default')).toBeUndefined();
    expect(hostSiteQueue('edge-1')).toBe('site/edge-1');
  });

  it('in Kubernetes mode comes from the metalflow.io/site label alone (absent: the default site)', () => {
    const obj = (labels: Record<string, string> | undefined, spec: Record<string, unknown>) => ({ apiVersion: 'metal3.io/v1alpha1', kind: 'BareMetalHost', metadata: { name: 'h', namespace: 'n', ...(labels ? { labels } : {}) }, spec });
    expect(specWithSite(obj({ 'metalflow.io/site': 'edge-1' }, { online: true }))).toEqual({ online: true, site: 'edge-1' });
    expect(specWithSite(obj(undefined, { online: true, site: 'edge-1' }))).toEqual({ online: true });
  });
});

describe('site workers', () => {
  it('the host workflow sends to a site exactly the site activities a site worker registers, but the IPAM claims and the idle fence', () => {
    const secrets: SecretReader = { read: () => Promise.resolve(undefined) } as unknown as SecretReader;
    const registered = Object.keys(createSiteActivities({ ironic: new IronicClient({ url: 'http://127.0.0.1:1' }), secrets }));
    const central = ['claimHostAddress', 'releaseHostAddress', 'idleFence'];
    expect([...SITE_ACTIVITIES].sort()).toEqual(registered.filter((n) => !central.includes(n)).sort());
  });

  it('npm run worker -- --site NAME serves a configured site; the default one and unknown ones are refused', () => {
    expect(siteArgument(['--site', 'edge-1'])).toBe('edge-1');
    expect(siteArgument(['--site=edge-1'])).toBe('edge-1');
    expect(siteArgument([])).toBeUndefined();
    expect(() => siteArgument(['--site'])).toThrow(/--site needs a site name/);
    const r = parseSites(file([{ name: 'edge-1', ironic: { url: 'http://x:1' } }]), DEFAULT);
    expect(siteToServe(r, 'edge-1').taskQueue).toBe('site/edge-1');
    expect(() => siteToServe(r, 'default')).toThrow(/served by the central worker/);
    expect(() => siteToServe(r, 'edge-2')).toThrow(/--site edge-2: no such site in METALFLOW_SITES_FILE; its sites are "edge-1"/);
  });
});
