/** BMC credentials held at the site (`"secrets": "site"`, docs/sites.md, *Credentials*), without a stack. */
import { describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseSites } from '../../config/sites';
import { DEFAULT_SITE, type Site } from '../../model/site';
import { HostSecrets } from '../../api/host-secrets';
import { LocalSecretStore, loadSecretKey } from '../../clients/secrets/local-store';
import { siteCredentialStore } from '../../workers/site-secrets';
import { siteSecretDirSettings } from '../../config/site-secret-dir';
import { readSecretKey } from '../../activities/common/secret-key';
import { siteSecretCommand } from '../../scripts/site-secret';
import { hostFacts } from '../../k8s/controller/metric-facts';
import { referencedSecrets } from '../../activities/pivot/export';
import type { HostSpec } from '../../model/host';

const DEFAULT: Site = { name: DEFAULT_SITE, ironic: { url: 'http://127.0.0.1:6385' }, taskQueue: 'metalflow-hosts' };
const file = (sites: unknown[]) => JSON.stringify({ sites });
const ref = { namespace: 'metal3', name: 'edge-host' };
const spec = (site: string): HostSpec => ({ site, bmc: { address: 'redfish+http://127.0.0.1:8000/redfish/v1/Systems/1', credentialsName: 'edge-host-bmc' }, online: false }) as HostSpec;

describe('the sites file\'s "secrets"', () => {
  it('is "central" unless a site says "site"; the registry names the sites that hold their credentials', () => {
    const r = parseSites(file([{ name: 'a', ironic: { url: 'http://x:1' } }, { name: 'b', ironic: { url: 'http://y:1' }, secrets: 'site' }, { name: 'c', ironic: { url: 'http://z:1' }, secrets: 'central' }]), DEFAULT);
    expect(r.get('a')?.secrets).toBeUndefined();
    expect(r.get('b')?.secrets).toBe('site');
    expect(r.get('c')?.secrets).toBe('central');
    expect(r.credentialSites()).toEqual(['b']);
  });

  it.each([['remote'], [true], [''], [{ store: 'site' }], ['Site']])('refuses %j, naming the field and the accepted values', (value) => {
    expect(() => parseSites(file([{ name: 'edge-1', ironic: { url: 'http://x:1' }, secrets: value }]), DEFAULT)).toThrow(
      new RegExp(`^METALFLOW_SITES_FILE: sites\\[0\\]\\.secrets must be "central" \\(the central secret store, the default\\) or "site" \\(BMC credentials only in the site worker's own store\\), got ${JSON.stringify(JSON.stringify(value)).slice(1, -1).replace(/[{}[\]]/g, '\\$&')}$`),
    );
  });
});

describe('the API and a site that holds its credentials', () => {
  const store = () => new LocalSecretStore(mkdtempSync(join(tmpdir(), 'mf-central-')), loadSecretKey({ key: Buffer.alloc(32, 1).toString('base64') }));

  it('refuses inline credentials with the field, the site and what to do instead; stores nothing', async () => {
    const central = store();
    const r = new HostSecrets(central).writesFor(ref, { spec: spec('edge-1'), credentials: { username: 'admin', password: 'hunter2' } }, 'edge-1');
    expect(r).toEqual({ errors: [{ field: 'credentials', reason: expect.stringContaining('are not accepted for a host of site "edge-1", which holds its BMC credentials at the site') as string }] });
    const reason = 'errors' in r ? r.errors[0]!.reason : '';
    expect(reason).toContain('as the Secret metal3/edge-host-bmc');
    expect(reason).toContain('npm run site-secret -- put metal3 edge-host-bmc');
    expect(reason).not.toContain('hunter2');
  });

  it('does not look for the credentials Secret in the central store, but still for user data', async () => {
    const s = new HostSecrets(store());
    const withData = { ...spec('edge-1'), userData: { name: 'edge-host-user-data' } } as HostSpec;
    expect(await s.check(ref, spec('edge-1'), [], () => Promise.resolve(undefined), 'edge-1')).toEqual([]);
    expect(await s.check(ref, withData, [], () => Promise.resolve(undefined), 'edge-1')).toEqual([{ field: 'spec.userData.name', reason: expect.stringContaining('Secret metal3/edge-host-user-data does not exist') as string }]);
    // A site whose credentials are central: the Secret must exist, as always.
    expect(await s.check(ref, spec('edge-2'), [], () => Promise.resolve(undefined))).toEqual([{ field: 'spec.bmc.credentialsName', reason: expect.stringContaining('does not exist') as string }]);
    const accepted = s.writesFor(ref, { spec: spec('edge-2'), credentials: { username: 'admin', password: 'pw' } });
    expect('writes' in accepted && accepted.writes.map((w) => w.name)).toEqual(['edge-host-bmc']);
  });
});

describe('the site worker\'s own store', () => {
  const site: Site = { name: 'edge-1', ironic: { url: 'http://x:1' }, taskQueue: 'site/edge-1', secrets: 'site' };

  it('is none for a central site; a site one needs METALFLOW_SITE_SECRET_DIR, not the central folder', async () => {
    expect(await siteCredentialStore({ ...site, secrets: 'central' }, {}, false)).toBeUndefined();
    await expect(siteCredentialStore(site, {}, false)).rejects.toThrow(/site "edge-1" holds its BMC credentials at the site \("secrets": "site" in METALFLOW_SITES_FILE\): set METALFLOW_SITE_SECRET_DIR/);
    expect(() => siteSecretDirSettings('edge-1', { METALFLOW_SITE_SECRET_DIR: '/s', METALFLOW_SECRET_DIR: '/s' })).toThrow(/METALFLOW_SITE_SECRET_DIR is METALFLOW_SECRET_DIR \(\/s\), the central secret store/);
    expect(siteSecretDirSettings('edge-1', { METALFLOW_SITE_SECRET_DIR: '/var/lib/m/site-secrets' }).keyFile).toBe('/var/lib/m/site-secrets.key');
    await expect(siteCredentialStore(site, { KUBERNETES_SERVICE_HOST: '' }, true)).rejects.toThrow(/needs the site cluster's Secrets, through METALFLOW_SITE_SECRETS_KUBECONFIG or a pod service account/);
  });

  it('npm run site-secret puts credentials the site worker reads; a missing one names the site\'s store', async () => {
    const base = mkdtempSync(join(tmpdir(), 'mf-site-'));
    const env = { METALFLOW_SITE_SECRET_DIR: join(base, 'secrets') };
    const pw = join(base, 'pw');
    writeFileSync(pw, 's3cret\n');
    const lines: string[] = [];
    await siteSecretCommand(['put', 'metal3', 'edge-host-bmc', '--username', 'admin', '--password-file', pw], env, (l) => lines.push(l));
    await siteSecretCommand(['check', 'metal3', 'edge-host-bmc'], env, (l) => lines.push(l));
    expect(lines.join('\n')).not.toContain('s3cret');
    expect(existsSync(join(base, 'secrets.key'))).toBe(true);
    const store = await siteCredentialStore(site, env, false);
    expect(await readSecretKey(store!.reader, 'metal3', 'edge-host-bmc', ['password'])).toBe('s3cret');
    await expect(readSecretKey(store!.reader, 'metal3', 'other-bmc', ['password'])).rejects.toThrow(
      `Secret metal3/other-bmc not found in the secret store of site "edge-1" (METALFLOW_SITE_SECRET_DIR ${join(base, 'secrets')})`,
    );
    await expect(siteSecretCommand(['put', 'metal3', 'x', '--username', 'admin'], env, () => {})).rejects.toThrow(/put needs --username and --password-file/);
    await expect(siteSecretCommand(['check', 'metal3', 'x'], env, () => {})).rejects.toThrow(/Secret metal3\/x is not in the site's store/);
    expect(readdirSync(join(base, 'secrets'))).toEqual(['metal3']);
  });
});

describe('central readers skip a site\'s credentials', () => {
  const host = (site?: string) => ({ metadata: { name: 'h', namespace: 'metal3', ...(site ? { labels: { 'metalflow.io/site': site } } : {}) }, spec: { bmc: { credentialsName: 'h-bmc' } } });

  it('the controller counts no missing Secret for a host of such a site', () => {
    expect(hostFacts(host('edge-1'), () => false, ['edge-1'])).toEqual({});
    expect(hostFacts(host('edge-2'), () => false, ['edge-1'])).toEqual({ credentials: { name: 'h-bmc', found: false } });
    expect(hostFacts(host(), () => false, ['edge-1'])).toEqual({ credentials: { name: 'h-bmc', found: false } });
  });

  it('a pivot neither looks for nor copies them, but does the user data', () => {
    const s = { bmc: { credentialsName: 'h-bmc' }, userData: { name: 'h-ud' } };
    expect(referencedSecrets(s, true)).toEqual([{ field: 'spec.userData', name: 'h-ud' }]);
    expect(referencedSecrets(s).map((x) => x.name)).toEqual(['h-bmc', 'h-ud']);
  });
});
