/**
 * BMC credentials held at the site (docs/sites.md, *Credentials*) in
 * Kubernetes mode, on real kube-apiservers, Temporal and Ironic. The
 * management cluster (the shared test API server) has the BareMetalHosts,
 * labelled with site S whose sites-file entry says `"secrets": "site"`; S has
 * a cluster of its own (a second API server + etcd, scripts/kube.sh), an
 * Ironic and Redfish BMCs of its own (sushy-tools: 401 to any password but the
 * right one), and its site worker is a real process reading Secrets from S's
 * cluster through METALFLOW_SITE_SECRETS_KUBECONFIG, while its
 * METALFLOW_KUBECONFIG stays the management cluster's.
 *
 * - A host whose credentials Secret is only in S's cluster registers at S and
 *   is powered on through S's Ironic; the management cluster has no such Secret.
 * - A host whose Secret is in neither cluster shows the error naming S's
 *   store, and registers once the Secret is created in S's cluster.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../config/env';
import { SITE_LABEL } from '../../model/site';
import { IronicClient } from '../../clients/ironic/client';
import { uniq, waitFor } from '../support/harness';
import { ownIronic, type OwnIronic } from '../support/own-ironic';
import { unusedPort } from '../support/ports';
import { kubectl, startOwnKube, type OwnKube } from './kube-harness';
import { hostDoc, secretDoc } from './manifests';
import { useShimSuite } from './shim-harness';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';

const NS = uniq('mf-site-creds');
const TQ = uniq('tq-site-creds');
const SITE = uniq('held');
const SITES_FILE = join(mkdtempSync(join(tmpdir(), 'mf-k8s-site-creds-')), 'sites.json');
const SITES = { METALFLOW_SITES_FILE: SITES_FILE };
const SYSTEM = (n: number) => `/redfish/v1/Systems/6d660000-0000-4000-8000-00000000000${n}`;
let ironic: OwnIronic | undefined;
let siteKube: OwnKube | undefined;

// Registered before the suite's: the sites file is read by the processes it starts.
beforeAll(async () => {
  ironic = ownIronic('test-k8s-site-credentials', await unusedPort(), { withSushy: true });
  const started = ironic.start();
  siteKube = startOwnKube(join(REPO_ROOT, '.state', 'test-k8s-site-credentials-kube'), { etcd: await unusedPort(), etcdPeer: await unusedPort(), api: await unusedPort() });
  await started;
  writeFileSync(SITES_FILE, JSON.stringify({ sites: [{ name: SITE, ironic: { url: ironic.url }, secrets: 'site' }] }));
  kubectl(['apply', '-f', '-'], { kubeconfig: siteKube.kubeconfig, input: JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } }) });
}, 300_000);
afterAll(async () => {
  siteKube?.stop();
  await ironic?.stop();
});
const suite = useShimSuite(NS, TQ, SITES, () => SITES);

const json = (args: string[]) => JSON.parse(kubectl([...args, '-n', NS, '-o', 'json']).stdout);
const apply = (doc: Record<string, unknown>, kubeconfig?: string) => kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify(doc), ...(kubeconfig ? { kubeconfig } : {}) });
const hostAt = (name: string, system: number) => {
  const doc = hostDoc(name, {
    online: true,
    automatedCleaningMode: 'disabled',
    bmc: { address: `redfish+${ironic!.sushyUrl}${SYSTEM(system)}`, credentialsName: `${name}-bmc` },
  }, { 'inspect.metal3.io': 'disabled' });
  return { ...doc, metadata: { ...doc.metadata, labels: { [SITE_LABEL]: SITE } } };
};
interface Bmh { status?: { errorType?: string; errorMessage?: string; poweredOn?: boolean; provisioning?: { state: string; ID: string } } }
const bmh = (name: string): Bmh => json(['get', 'bmh', name]) as Bmh;
const secretInManagement = (name: string) => kubectl(['get', 'secret', name, '-n', NS], { check: false }).status === 0;

describe('a site that holds its BMC credentials in its own cluster', () => {
  it('registers a host whose Secret is only in the site cluster; one in no cluster names the site store, and registers once the Secret is there', { timeout: 300_000 }, async () => {
    const worker = suite.shim.startWorker({ ...SITES, METALFLOW_SITE_SECRETS_KUBECONFIG: siteKube!.kubeconfig }, ['--site', SITE]);
    apply(secretDoc('held-bmc', { username: 'admin', password: 'password' }), siteKube!.kubeconfig);
    apply(hostAt('held', 1));
    apply(hostAt('missing', 2));

    const rested = await waitFor('held available and on', async () => {
      const s = bmh('held').status;
      return s?.provisioning?.state === 'available' && s.poweredOn ? s : undefined;
    }, { timeoutMs: 180_000, intervalMs: 500 });
    const node = await new IronicClient({ url: ironic!.url }).getNode(rested.provisioning!.ID);
    expect(node?.extra.metalflow_host).toBe(`${NS}/held`);
    expect(node?.driver_info).toMatchObject({ redfish_username: 'admin', redfish_password: '******' });
    expect(node?.power_state).toBe('power on');
    expect(secretInManagement('held-bmc')).toBe(false);
    expect(suite.shim.output(worker)).toContain(`BMC credentials from Secrets of the cluster of METALFLOW_SITE_SECRETS_KUBECONFIG ${siteKube!.kubeconfig}`);

    const failed = await waitFor('missing shows its error', async () => (bmh('missing').status?.errorMessage ? bmh('missing').status : undefined), { timeoutMs: 60_000, intervalMs: 500 });
    expect(failed?.errorType).toBe('registration error');
    expect(failed?.errorMessage).toContain(`Secret ${NS}/missing-bmc not found in the secret store of site "${SITE}" (the cluster of METALFLOW_SITE_SECRETS_KUBECONFIG`);
    apply(secretDoc('missing-bmc', { username: 'admin', password: 'password' }), siteKube!.kubeconfig);
    await waitFor('missing available once its Secret is in the site cluster', async () => bmh('missing').status?.provisioning?.state === 'available', { timeoutMs: 120_000, intervalMs: 500 });
    expect(secretInManagement('missing-bmc')).toBe(false);
  });
});
