/**
 * Records a host that publishes its status to Kubernetes, for the replay test
 * (patch `background-status-publish`): the worker has a Kubernetes client for
 * the test kube-apiserver (test/k8s/kube-harness.ts, scripts/kube.sh), the
 * host runs with `publishStatus` and its BareMetalHost exists, so every
 * transition writes status and Events in the background while the host goes
 * available → provisioned → available → deleted. No controller runs: the
 * host is driven through the API, which keeps the recording to the status
 * path. Saves host-kubernetes-status<suffix>.json (argument: the suffix; none
 * for the first shape); with a suffix the host is also registered again while
 * available, for a changed cleaning mode (patch `registration-events`:
 * `-registration-events`). Never overwrites a fixture.
 * `node --import tsx test/support/record-kube-status-histories.ts [suffix]` on a running
 * test stack (it starts the test kube-apiserver itself, and stops it unless
 * another user holds it or METALFLOW_KEEP_KUBE=1).
 */
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { REPO_ROOT } from '../../config/env';
import { loadKubeConfig } from '../../clients/kubernetes/kube-config';
import { KubeRest } from '../../clients/kubernetes/kube-rest';
import { hostWorkflowId } from '../../types/host-ref';
import { hostViewQuery, type HostView } from '../../workflows/definitions';
import type { hostWorkflow } from '../../workflows/host';
import { KUBECONFIG, kubectl, useKube } from '../k8s/kube-harness';
import { fakeHostSpec, hostDoc } from '../k8s/manifests';
import { FAST_HOST_OPTIONS, startHarness, uniq, waitFor } from './harness';
import { assertNewFixtures, saveHistory } from './record-fixture';

const suffix = process.argv[2] ?? '';
const FILE = `host-kubernetes-status${suffix}.json`;
assertNewFixtures(FILE);
const lease = useKube();
const ns = uniq('replay-kube');
try {
  kubectl(['apply', '-f', join(REPO_ROOT, 'k8s', 'crds')]);
  kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd/baremetalhosts.metal3.io', 'crd/hardwaredata.metal3.io']);
  kubectl(['create', 'namespace', ns]);
  const kc = new KubeConfig();
  loadKubeConfig(kc, KUBECONFIG);
  const kubernetes = await KubeRest.create(kc);
  const h = await startHarness({ kubernetes, hostOptions: { ...FAST_HOST_OPTIONS, publishStatus: true } });
  try {
    const ref = { namespace: ns, name: 'kube-status' };
    const spec = fakeHostSpec(ref.name);
    kubectl(['apply', '-n', ns, '-f', '-'], { input: JSON.stringify(hostDoc(ref.name, spec)) });
    const handle = h.client.workflow.getHandle<typeof hostWorkflow>(hostWorkflowId(ref));
    /** Settled in the workflow and shown on the BareMetalHost. */
    const published = (state: string) => async () => {
      const v = await handle.query(hostViewQuery);
      if (v.currentOperation || v.status.provisioning.state !== state) return undefined;
      const shown = kubectl(['get', 'bmh', ref.name, '-n', ns, '-o', 'jsonpath={.status.provisioning.state}']).stdout;
      return shown === state;
    };
    await h.hosts.put(ref, { spec, credentials: { username: 'admin', password: 'recorded-password' } });
    await waitFor('available on the BareMetalHost', published('available'), { timeoutMs: 120_000 });
    if (suffix) {
      // A registration in a steady state: the node updated for a changed spec.
      await h.hosts.put(ref, { spec: { ...spec, automatedCleaningMode: 'disabled' } });
      await waitFor('registered again', async () => {
        const v = await handle.query(hostViewQuery);
        return !v.currentOperation && v.operations.filter((o) => o.kind === 'enroll' && o.outcome === 'succeeded').length === 2;
      }, { timeoutMs: 120_000 });
    }
    await h.hosts.setImage(ref, { url: 'http://127.0.0.1/replay.qcow2', checksum: 'f'.repeat(64), format: 'qcow2' });
    await waitFor('provisioned on the BareMetalHost', published('provisioned'), { timeoutMs: 120_000 });
    await h.hosts.setImage(ref, null);
    await waitFor('available again on the BareMetalHost', published('available'), { timeoutMs: 120_000 });
    await h.hosts.remove(ref);
    const final = (await handle.result()) as HostView;
    if (final.operations.at(-1)?.kind !== 'delete') throw new Error('the host did not end with its delete');
    saveHistory(hostWorkflowId(ref), FILE);
  } finally {
    await h.close();
  }
} finally {
  kubectl(['delete', 'namespace', ns, '--wait=false'], { check: false });
  lease.release();
}
