/**
 * Metal3's HostFirmwareSettings and FirmwareSchema CRDs (generated from
 * model/firmware-settings.ts) on a real kube-apiserver: Metal3's manifests
 * apply unchanged, values that are integers or strings both (intstr), and
 * what the schema forbids is refused by the API server itself.
 *
 *   METALFLOW_TEST_NO_STACK=1 npx vitest run test/k8s/firmware-crds.test.ts
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../config/env';
import { KUBE_BUILD_TIMEOUT_MS, kubectl, useKube, type KubeLease } from './kube-harness';

const NS = `fw-${process.pid}-${Date.now().toString(36)}`;
const apply = (doc: Record<string, unknown>) => kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify({ apiVersion: 'metal3.io/v1alpha1', ...doc }), check: false });
const get = (kind: string, name: string): Record<string, unknown> => JSON.parse(kubectl(['get', kind, name, '-n', NS, '-o', 'json']).stdout) as Record<string, unknown>;

let kube: KubeLease | undefined;
beforeAll(() => {
  kube = useKube();
  kubectl(['apply', '-f', join(REPO_ROOT, 'k8s', 'crds')]);
  kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd/hostfirmwaresettings.metal3.io', 'crd/firmwareschemas.metal3.io', 'crd/hostfirmwarecomponents.metal3.io']);
  kubectl(['create', 'namespace', NS]);
}, KUBE_BUILD_TIMEOUT_MS);

afterAll(() => {
  if (kube) kubectl(['delete', 'hfs,firmwareschemas,hostfirmwarecomponents', '--all', '-n', NS, '--wait=false'], { check: false });
  kube?.release();
}, 180_000);

describe('HostFirmwareSettings and FirmwareSchema CRDs', () => {
  it("apply Metal3's shapes: settings as strings or integers, a schema by Ironic's registry field names", () => {
    const hfs = apply({ kind: 'HostFirmwareSettings', metadata: { name: 'host-0' }, spec: { settings: { ProcVirtualization: 'Disabled', NumCores: 16 } } });
    expect(hfs.stderr).toBe('');
    expect(hfs.status).toBe(0);
    expect((get('hfs', 'host-0').spec as { settings: unknown }).settings).toEqual({ ProcVirtualization: 'Disabled', NumCores: 16 });
    const schema = {
      hardwareVendor: 'VendorA',
      hardwareModel: 'ModelT',
      schema: {
        ProcVirtualization: { attribute_type: 'Enumeration', allowable_values: ['Enabled', 'Disabled'], read_only: false },
        NumCores: { attribute_type: 'Integer', lower_bound: 1, upper_bound: 64, reset_required: true },
        SerialNumber: { attribute_type: 'String', min_length: 0, max_length: 16, read_only: true, unique: true },
      },
    };
    expect(apply({ kind: 'FirmwareSchema', metadata: { name: 'schema-0' }, spec: schema }).status).toBe(0);
    expect(get('firmwareschemas', 'schema-0').spec).toEqual(schema);
  });

  it('refuses an unknown attribute type, a setting value that is neither string nor integer, and an unknown field', () => {
    const badType = apply({ kind: 'FirmwareSchema', metadata: { name: 'bad-type' }, spec: { schema: { X: { attribute_type: 'Float' } } } });
    expect(badType.status).not.toBe(0);
    expect(badType.stderr).toMatch(/spec\.schema\.X\.attribute_type: Unsupported value: "Float"/);
    const badValue = apply({ kind: 'HostFirmwareSettings', metadata: { name: 'bad-value' }, spec: { settings: { X: true } } });
    expect(badValue.status).not.toBe(0);
    expect(badValue.stderr).toMatch(/spec\.settings\.X/);
    const unknown = kubectl(['apply', '--validate=strict', '-n', NS, '-f', '-'], {
      input: JSON.stringify({ apiVersion: 'metal3.io/v1alpha1', kind: 'HostFirmwareSettings', metadata: { name: 'unknown' }, spec: { settings: {}, turbo: true } }),
      check: false,
    });
    expect(unknown.status).not.toBe(0);
    expect(unknown.stderr).toMatch(/unknown field "spec\.turbo"/);
  });

  it("HostFirmwareComponents: Metal3's manifest applies; an update without a URL is refused", () => {
    const hfc = apply({ kind: 'HostFirmwareComponents', metadata: { name: 'host-0' }, spec: { updates: [{ component: 'bmc', url: 'https://firmware.example/bmc-5.0.1.bin' }] } });
    expect(hfc.stderr).toBe('');
    expect(hfc.status).toBe(0);
    expect(get('hostfirmwarecomponents', 'host-0').spec).toEqual({ updates: [{ component: 'bmc', url: 'https://firmware.example/bmc-5.0.1.bin' }] });
    const noUrl = apply({ kind: 'HostFirmwareComponents', metadata: { name: 'no-url' }, spec: { updates: [{ component: 'bios' }] } });
    expect(noUrl.status).not.toBe(0);
    expect(noUrl.stderr).toMatch(/spec\.updates\[0\]\.url: Required value/);
  });
});
