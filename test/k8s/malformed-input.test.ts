/**
 * A sample of the malformed-input corpus through the real kube-apiserver and
 * the controller (the whole corpus runs through the API in
 * test/e2e/malformed-input.test.ts and through the parser in
 * test/unit/malformed-corpus.test.ts): bad annotations and specs are reported
 * on the object naming the field, and no workflow is started; a string past
 * its limit is refused by the API server itself; the empty raid, firmware and
 * customDeploy values Metal3 manifests carry still apply.
 */
import { describe, expect, it } from 'vitest';
import { KubeConfig } from '@kubernetes/client-node';
import { createKubernetesActivities } from '../../activities/kubernetes/host-status';
import { KubeRest } from '../../clients/kubernetes/kube-rest';
import { emptyStatus, MAX_LENGTH } from '../../model/host';
import { hostWorkflowId } from '../../model/host-ref';
import { uniq, waitFor } from '../support/harness';
import { ANNOTATION_CASES, fullSpec, SPEC_CASES } from '../../bench/support/malformed-corpus';
import { KUBECONFIG, kubectl } from './kube-harness';
import { fakeHostSpec, hostDoc, secretDoc } from './manifests';
import { useShimSuite } from './shim-harness';

const NS = uniq('mf-bad');
const suite = useShimSuite(NS, uniq('tq-bad'));

const apply = (doc: Record<string, unknown>, check = true) => kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify(doc), check });
const status = (name: string): { operationalStatus?: string; errorMessage?: string } | undefined =>
  JSON.parse(kubectl(['get', 'bmh', name, '-n', NS, '-o', 'json']).stdout).status;
const events = (name: string): { reason: string; message: string }[] =>
  JSON.parse(kubectl(['get', 'events', '-n', NS, '--field-selector', `involvedObject.name=${name}`, '-o', 'json']).stdout).items;

/** Applies a host (with its Secret) and waits for the controller to report it; returns the message. */
async function reported(name: string, spec: Record<string, unknown>, annotations: Record<string, string> = {}): Promise<string> {
  apply(secretDoc(`${name}-bmc-secret`, { username: 'admin', password: 'x' }));
  apply(hostDoc(name, spec, annotations));
  await waitFor('an error status', async () => status(name)?.operationalStatus === 'error', { timeoutMs: 60_000 });
  // Nothing was started for it.
  expect(await suite.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name })).describe().catch(() => undefined)).toBeUndefined();
  return status(name)!.errorMessage!;
}

const annotationCase = (name: string) => {
  const c = ANNOTATION_CASES.find((a) => a.name === name);
  if (!c) throw new Error(`no annotation case ${name}`);
  return c;
};
const specCase = (name: string) => {
  const c = SPEC_CASES.find((s) => s.name === name);
  if (!c) throw new Error(`no spec case ${name}`);
  return c;
};

describe('malformed input in Kubernetes mode', () => {
  const annotations = ['status: not JSON', 'inspect: now', 'status: unknown provisioning state'];
  it.each(annotations)('annotation %s: InvalidAnnotation naming it and what it accepts, no workflow', async (caseName) => {
    const c = annotationCase(caseName);
    const name = uniq('ann');
    const message = await reported(name, fakeHostSpec(name), c.annotations);
    expect(message).toContain(`metadata.annotations["${c.annotation}"]`);
    expect(message).toMatch(c.accepted);
    await waitFor('the InvalidAnnotation Event', async () => events(name).some((e) => e.reason === 'InvalidAnnotation'));
  });

  const specs = ['raid level unsupported', 'Redfish Systems collection', 'image URL port 0'];
  it.each(specs)('spec %s: InvalidSpec naming the field, no workflow', async (caseName) => {
    const c = specCase(caseName);
    const name = uniq('spec');
    const spec = fullSpec({ address: `fake://${name}`, credentialsName: `${name}-bmc-secret`, mac: '52:54:00:10:20:30', namespace: NS });
    c.mutate(spec);
    const message = await reported(name, spec);
    expect(message.slice(0, c.field.length + 2)).toBe(`${c.field}: `);
    await waitFor('the InvalidSpec Event', async () => events(name).some((e) => e.reason === 'InvalidSpec'));
  });

  it('a name whose Ironic node name would pass 255 characters: InvalidSpec on metadata.name', async () => {
    const name = `n${'x'.repeat(254 - NS.length)}`;
    const message = await reported(name, fakeHostSpec(name));
    expect(message).toMatch(/^metadata\.name: .*Ironic allows 255/);
  });

  it('a string past its limit is refused by the API server, naming the field', () => {
    const name = uniq('long');
    const r = apply(hostDoc(name, fakeHostSpec(name, { description: 'd'.repeat(4097) })), false);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/spec\.description: Too long: may not be (longer|more) than 4096/);
  });

  it('the empty raid, firmware and customDeploy values of Metal3 manifests still apply and the host becomes available', async () => {
    const name = uniq('empty');
    apply(secretDoc(`${name}-bmc-secret`, { username: 'admin', password: 'x' }));
    apply(hostDoc(name, fakeHostSpec(name, { raid: { hardwareRAIDVolumes: null, softwareRAIDVolumes: [] }, firmware: {}, customDeploy: { method: '' } })));
    kubectl(['wait', '-n', NS, '--for=jsonpath={.status.provisioning.state}=available', `bmh/${name}`, '--timeout=120s']);
    expect(status(name)?.operationalStatus).toBe('OK');
  });

  it("metalflow's own status past the limits (a long Ironic error, a BMC's long model) is cut to fit, not refused", async () => {
    const name = uniq('fit');
    // Paused: the controller starts no workflow that would publish a status of its own meanwhile.
    apply(hostDoc(name, { online: true }, { 'baremetalhost.metal3.io/paused': 'status test' }));
    const kc = new KubeConfig();
    kc.loadFromFile(KUBECONFIG);
    const kube = createKubernetesActivities({ rest: await KubeRest.create(kc) });
    const observed = { ...emptyStatus(), errorMessage: `deploy failed: ${'e'.repeat(40_000)}`, hardware: { systemVendor: { productName: 'p'.repeat(300) } } };
    expect(await kube.publishHostStatus({ ref: { namespace: NS, name }, status: observed })).toEqual({ published: true });
    const published = JSON.parse(kubectl(['get', 'bmh', name, '-n', NS, '-o', 'json']).stdout).status;
    expect(published.errorMessage).toHaveLength(MAX_LENGTH.message);
    expect(published.errorMessage.startsWith('deploy failed: eee')).toBe(true);
    expect(published.hardware.systemVendor.productName).toHaveLength(MAX_LENGTH.text);
    const hd = JSON.parse(kubectl(['get', 'hardwaredata', name, '-n', NS, '-o', 'json']).stdout);
    expect(hd.spec.hardware.systemVendor.productName).toHaveLength(MAX_LENGTH.text);
  });
});
