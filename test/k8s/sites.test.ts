/**
 * A dark site in Kubernetes mode (docs/sites.md), on the real kube-apiserver,
 * Temporal and Ironic: a BareMetalHost labelled with a configured site whose
 * worker is not running waits, and says so on the object (the condition
 * `SiteReachable` False, a `SiteUnreachable` Warning Event); the site's worker
 * started (`npm run worker -- --site NAME`, the same Ironic as the test
 * stack's), the host registers and the condition turns True.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { IRONIC_URL } from '../support/env';
import { uniq, waitFor } from '../support/harness';
import { SITE_LABEL } from '../../model/site';
import { kubectl } from './kube-harness';
import { fakeHostSpec, hostDoc, secretDoc } from './manifests';
import { useShimSuite } from './shim-harness';

const NS = uniq('mf-sites');
const TQ = uniq('tq-sites');
/** A site of this file's own: its task queue (`site/<name>`) is shared by every worker on the Temporal server. */
const SITE = uniq('edge');
const SITES_FILE = join(mkdtempSync(join(tmpdir(), 'mf-k8s-sites-')), 'sites.json');
writeFileSync(SITES_FILE, JSON.stringify({ sites: [{ name: SITE, ironic: { url: IRONIC_URL } }] }));
const SITES = { METALFLOW_SITES_FILE: SITES_FILE };
// The controller starts the host workflows: the watch (60 s unless set) is one of their options.
const suite = useShimSuite(NS, TQ, { ...SITES, METALFLOW_SITE_WATCH_SECONDS: '2' }, () => SITES);

const json = (args: string[]) => JSON.parse(kubectl([...args, '-n', NS, '-o', 'json']).stdout);
const apply = (doc: Record<string, unknown>) => kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify(doc) });
interface Condition { type: string; status: string; reason: string; message: string }
const siteCondition = (name: string): Condition | undefined =>
  (json(['get', 'bmh', name]).status?.conditions as Condition[] | undefined)?.find((c) => c.type === 'SiteReachable');
const events = (name: string) =>
  JSON.parse(kubectl(['get', 'events', '-n', NS, '--field-selector', `involvedObject.name=${name}`, '-o', 'json']).stdout).items as { type: string; reason: string; message: string }[];

describe('a host of a dark site', () => {
  it('shows SiteReachable False with a Warning Event while its site takes nothing, and True once its site worker runs', { timeout: 180_000 }, async () => {
    const name = 'edge-host';
    apply(secretDoc(`${name}-bmc-secret`, { username: 'admin', password: 'pw' }));
    const doc = hostDoc(name, fakeHostSpec(name));
    apply({ ...doc, metadata: { ...doc.metadata, labels: { [SITE_LABEL]: SITE } } });

    const dark = await waitFor('SiteReachable False', async () => (siteCondition(name)?.status === 'False' ? siteCondition(name) : undefined), { timeoutMs: 60_000 });
    expect(dark).toMatchObject({ reason: 'SiteUnreachable', message: expect.stringMatching(new RegExp(`^site unreachable: no worker of site "${SITE}" took \\S+ from task queue site/${SITE}; waiting for the site`)) });
    // Nothing of the site's work ran elsewhere: the host has no node yet.
    expect(json(['get', 'bmh', name]).status.provisioning.ID).toBe('');
    const warning = await waitFor('the SiteUnreachable Event', async () => events(name).find((e) => e.reason === 'SiteUnreachable'), { timeoutMs: 30_000 });
    expect(warning).toMatchObject({ type: 'Warning', message: dark!.message });

    // The site's worker comes: the waiting call is taken, the host registers and the condition turns True.
    suite.shim.startWorker(SITES, ['--site', SITE]);
    kubectl(['wait', '-n', NS, '--for=jsonpath={.status.provisioning.state}=available', `bmh/${name}`, '--timeout=120s']);
    await waitFor('SiteReachable True', async () => siteCondition(name)?.status === 'True', { timeoutMs: 30_000 });
    expect(siteCondition(name)).toMatchObject({ reason: 'SiteReachable' });
    expect(events(name).filter((e) => e.reason === 'SiteUnreachable')).toHaveLength(1);
    expect(events(name).find((e) => e.reason === 'SiteReachable')).toMatchObject({ type: 'Normal' });
  });
});
