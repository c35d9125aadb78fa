/**
 * A Kubernetes-mode host whose inventory is as large as a real server's, in an
 * error loop (its BMC credentials missing): every failure writes its status.
 * Written by an activity, each write's input was history, and the inventory
 * grew a run's history by hundreds of KB per retry; the worker's status writer
 * puts nothing in history, and sends the inventory once while it is unchanged.
 * Every run's history stays small (read from Temporal's describe), and the
 * object shows the failures and the inventory.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeConfig } from '@kubernetes/client-node';
import { loadKubeConfig } from '../../clients/kubernetes/kube-config';
import { KubeRest } from '../../clients/kubernetes/kube-rest';
import { readoptHost } from '../../control/host-run';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery } from '../../contracts/host';
import { FAST_HOST_OPTIONS, startHarness, uniq, waitFor, type Harness } from '../support/harness';
import { largeInventory, runHistorySizes, statusWithInventory } from '../support/large-inventory';
import { KUBECONFIG, KUBE_BUILD_TIMEOUT_MS, kubectl, useKube, type KubeLease } from './kube-harness';
import { fakeHostSpec, hostDoc } from './manifests';
import { cleanNamespace, prepareNamespace } from './shim-harness';

const NS = uniq('mf-history');
const MIB = 1024 * 1024;
/**
 * Every failure is retried after 1 s: what is measured is the history the failures write, not the backoff between
 * them (FAST_HOST_OPTIONS' doubling up to 4 s made the 15 failures take about 50 s).
 */
const OPTIONS = { ...FAST_HOST_OPTIONS, maxErrorBackoffSeconds: 1, publishStatus: true };
let kube: KubeLease | undefined;
let h: Harness | undefined;

beforeAll(async () => {
  kube = useKube();
  prepareNamespace(NS);
  const kc = new KubeConfig();
  loadKubeConfig(kc, KUBECONFIG);
  h = await startHarness({ kubernetes: await KubeRest.create(kc), hostOptions: OPTIONS });
}, KUBE_BUILD_TIMEOUT_MS);
afterAll(async () => {
  await h?.close();
  if (kube) cleanNamespace(NS);
  kube?.release();
});

describe('history of a host with a large inventory', () => {
  it('stays under 2 MB per run through an error loop that writes its status at every failure', async () => {
    if (!h) throw new Error('no harness');
    const ref = { namespace: NS, name: 'large-inventory' };
    const id = hostWorkflowId(ref);
    const hardware = largeInventory(300);
    const spec = fakeHostSpec(ref.name);
    kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify(hostDoc(ref.name, spec)) });
    // Started the way a re-adopted host is (its last status, inventory included); no credentials
    // Secret exists, so every registration fails and is retried after the backoff.
    await readoptHost(h.client, { ref, taskQueue: h.taskQueue, options: OPTIONS, status: statusWithInventory(hardware), spec });
    const handle = h.client.workflow.getHandle(id);
    const failures = 15;
    await waitFor(`${failures} failed registrations`, async () => ((await handle.query(hostViewQuery)).status.errorCount >= failures ? true : undefined), { timeoutMs: 240_000 });
    // The failures were published: the object shows the count and the inventory.
    await waitFor('the error count on the BareMetalHost', async () => {
      const status = JSON.parse(kubectl(['get', 'bmh', ref.name, '-n', NS, '-o', 'json']).stdout).status as { errorCount?: number; hardware?: { storage?: unknown[] } } | undefined;
      return (status?.errorCount ?? 0) >= failures && status?.hardware?.storage?.length === hardware.storage?.length ? true : undefined;
    }, { timeoutMs: 60_000 });
    const runs = await runHistorySizes(h.client, id);
    console.log(`history of ${id}: ${runs.map((r) => `${r.runId.slice(0, 8)} ${r.events} events, ${(r.bytes / 1024).toFixed(0)} KiB`).join('; ')}`);
    expect(runs.length).toBeGreaterThan(0);
    for (const r of runs) expect(r.bytes).toBeLessThan(2 * MIB);
  });
});
