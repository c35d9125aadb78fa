/**
 * What the BareMetalHost CRD rejects beyond its OpenAPI schema's types, on a
 * real kube-apiserver (as crd.test.ts): CEL transition rules, the admission
 * policy for Secret namespaces, enums, required and unknown fields. No
 * controller runs here.
 *
 *   METALFLOW_TEST_NO_STACK=1 npx vitest run test/k8s
 */
import { describe, expect, it } from 'vitest';
import { BOOT_MODES } from '../../model/host';
import { POLICY_NAME } from '../../k8s/generate-crds';
import { kubectl, waitFor } from './kube-harness';
import { baseSpec, bmh, useCrdNamespaces } from './crd-support';

const { ns: NS, other: OTHER_NS, apply } = useCrdNamespaces('crdv');

describe('validation the schema alone cannot express', () => {
  it('bootMACAddress cannot change or be removed once set (CEL transition rule)', () => {
    expect(apply(bmh('mac-0', baseSpec('00:5c:52:31:3a:20'))).status).toBe(0);
    // Re-applying the same MAC with another change is fine.
    expect(apply(bmh('mac-0', { ...baseSpec('00:5c:52:31:3a:20'), online: false })).status).toBe(0);

    const changed = kubectl(['patch', 'bmh', 'mac-0', '-n', NS, '--type=merge', '-p', '{"spec":{"bootMACAddress":"00:5c:52:31:3a:21"}}'], { check: false });
    expect(changed.status).not.toBe(0);
    expect(changed.stderr).toContain('spec.bootMACAddress: Forbidden: bootMACAddress cannot be changed or removed once set');

    const removed = kubectl(['patch', 'bmh', 'mac-0', '-n', NS, '--type=json', '-p', '[{"op":"remove","path":"/spec/bootMACAddress"}]'], { check: false });
    expect(removed.status).not.toBe(0);
    expect(removed.stderr).toContain('bootMACAddress cannot be changed or removed once set');

    // A host enrolled without a boot MAC may get one later (e.g. from inspection).
    const noMac = baseSpec();
    delete noMac.bootMACAddress;
    expect(apply(bmh('mac-1', noMac)).status).toBe(0);
    expect(kubectl(['patch', 'bmh', 'mac-1', '-n', NS, '--type=merge', '-p', '{"spec":{"bootMACAddress":"00:5c:52:31:3a:22"}}'], { check: false }).status).toBe(0);
  });

  it('a userData/networkData/metaData Secret in another namespace is rejected (admission policy)', async () => {
    const crossNs = bmh('secret-ns-0', { ...baseSpec('00:5c:52:31:3a:30'), userData: { name: 'host-0-userdata', namespace: OTHER_NS } });
    // The policy is type-checked and loaded asynchronously after it is created.
    await waitFor(`ValidatingAdmissionPolicy ${POLICY_NAME} to be active`, () => apply(crossNs, '--dry-run=server').status !== 0, 60_000);

    const r = apply(crossNs);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain(`ValidatingAdmissionPolicy '${POLICY_NAME}'`);
    expect(r.stderr).toContain(`spec.userData.namespace: the Secret must be in the host's namespace "${NS}", not "${OTHER_NS}"`);

    for (const field of ['networkData', 'metaData']) {
      const other = apply(bmh(`secret-ns-${field.toLowerCase()}`, { ...baseSpec('00:5c:52:31:3a:31'), [field]: { name: 's', namespace: OTHER_NS } }));
      expect(other.status).not.toBe(0);
      expect(other.stderr).toContain(`spec.${field}.namespace: the Secret must be in the host's namespace`);
    }
    // The host's own namespace, spelled out or left empty, is fine.
    expect(apply(bmh('secret-ns-1', { ...baseSpec('00:5c:52:31:3a:32'), userData: { name: 'u', namespace: NS } })).status).toBe(0);
    expect(apply(bmh('secret-ns-2', { ...baseSpec('00:5c:52:31:3a:33'), networkData: { name: 'n', namespace: '' } })).status).toBe(0);
    // An update that moves an existing reference to another namespace is rejected too.
    const moved = kubectl(['patch', 'bmh', 'secret-ns-1', '-n', NS, '--type=merge', '-p', JSON.stringify({ spec: { userData: { name: 'u', namespace: OTHER_NS } } })], { check: false });
    expect(moved.status).not.toBe(0);
    expect(moved.stderr).toContain('spec.userData.namespace');
  });

  it('why a policy: CEL in a CRD schema cannot read metadata.namespace', () => {
    const probe = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'probes.cel.metalflow.io' },
      spec: {
        group: 'cel.metalflow.io',
        names: { kind: 'Probe', plural: 'probes' },
        scope: 'Namespaced',
        versions: [{
          name: 'v1', served: true, storage: true,
          schema: { openAPIV3Schema: {
            type: 'object',
            properties: { spec: { type: 'object', properties: { ns: { type: 'string' } } } },
            'x-kubernetes-validations': [{ rule: '!has(self.spec.ns) || self.spec.ns == self.metadata.namespace' }],
          } },
        }],
      },
    };
    const r = kubectl(['apply', '--dry-run=server', '-f', '-'], { input: JSON.stringify(probe), check: false });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain("undefined field 'namespace'");
  });

  it('an unknown bootMode is rejected by the enum', () => {
    const r = apply(bmh('boot-mode-0', { ...baseSpec('00:5c:52:31:3a:40'), bootMode: 'BIOS' }));
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain(`spec.bootMode: Unsupported value: "BIOS": supported values: ${BOOT_MODES.map((m) => `"${m}"`).join(', ')}`);
    for (const mode of BOOT_MODES) {
      expect(apply(bmh(`boot-mode-${mode.toLowerCase()}`, { ...baseSpec('00:5c:52:31:3a:41'), bootMode: mode })).status).toBe(0);
    }
  });

  it('missing required fields and unknown fields are rejected', () => {
    const noOnline = apply(bmh('required-0', { bmc: { address: 'ipmi://192.168.122.1:6233', credentialsName: 'host-0-bmc-secret' } }));
    expect(noOnline.status).not.toBe(0);
    expect(noOnline.stderr).toContain('spec.online: Required value');
    // A bmc without its address is still incomplete (Metal3 requires both fields when bmc is given).
    const partialBmc = apply(bmh('required-1', { online: true, bmc: { credentialsName: 'host-0-bmc-secret' } }));
    expect(partialBmc.status).not.toBe(0);
    expect(partialBmc.stderr).toContain('spec.bmc.address: Required value');
    const unknown = apply(bmh('unknown-0', { ...baseSpec('00:5c:52:31:3a:50'), bogusField: 1 }));
    expect(unknown.status).not.toBe(0);
    expect(unknown.stderr).toContain('unknown field "spec.bogusField"');
    // Open (pass-through) objects keep whatever Metal3 puts there.
    expect(apply(bmh('open-0', { ...baseSpec('00:5c:52:31:3a:51'), raid: { hardwareRAIDVolumes: [{ level: '1' }] } })).status).toBe(0);
    const raid = JSON.parse(kubectl(['get', 'bmh', 'open-0', '-n', NS, '-o', 'jsonpath={.spec.raid}']).stdout);
    expect(raid).toEqual({ hardwareRAIDVolumes: [{ level: '1' }] });
  });
});
