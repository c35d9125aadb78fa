import { describe, expect, it } from 'vitest';
import { schemaErrors, validateHostSpec } from '../../model/validate';
import { validateHostRef } from '../../model/host-ref';
import { emptyStatus, HardwareDetailsSchema, HostSpecSchema, HostStatusSchema, type HostSpec } from '../../model/host';
import { HostInputSchema, ListQuerySchema, PauseBodySchema, PowerOffParamsSchema } from '../../api/schemas';

const ref = { namespace: 'metal3', name: 'node-0' };

const good = (): HostSpec => ({
  bmc: { address: 'redfish+http://127.0.0.1:8000/redfish/v1/Systems/abc', credentialsName: 'node-0-bmc-secret' },
  bootMACAddress: '00:5C:52:31:3A:9C',
  online: true,
  image: {
    url: 'http://images.example/ubuntu.qcow2',
    checksum: 'a'.repeat(64),
    checksumType: 'sha256',
    format: 'qcow2',
  },
  userData: { name: 'node-0-user-data', namespace: 'metal3' },
  rootDeviceHints: { deviceName: '/dev/sda', minSizeGigabytes: 20 },
});

/** Validates a mutated copy of a good spec and returns the errors. */
function errorsFor(mutate: (spec: Record<string, any>) => void) {
  const spec = good() as Record<string, any>;
  mutate(spec);
  const result = validateHostSpec(ref, spec);
  if (result.ok) throw new Error('expected the spec to be rejected');
  return result.errors;
}

describe('validateHostSpec', () => {
  it('accepts a Metal3 user-guide host and normalises the MAC', () => {
    const result = validateHostSpec(ref, good());
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.value.spec.bootMACAddress).toBe('00:5c:52:31:3a:9c');
    expect(result.value.bmc?.type).toBe('redfish');
    expect(result.value.bmc?.driver).toBe('redfish');
  });

  it('does not mutate its input', () => {
    const spec = good();
    validateHostSpec(ref, spec);
    expect(spec.bootMACAddress).toBe('00:5C:52:31:3A:9C');
  });

  // One case per spec field: [what, mutation, field, words the reason must contain]
  const cases: [string, (s: Record<string, any>) => void, string, RegExp][] = [
    ['disablePowerOff with online: false', (s) => { s.disablePowerOff = true; s.online = false; }, 'spec.online', /must be true when spec.disablePowerOff/],
    ['ociAuthSecretName not a name', (s) => (s.image = { url: 'http://x/i.qcow2', checksum: 'a'.repeat(64), ociAuthSecretName: 'Bad Name' }), 'spec.image.ociAuthSecretName', /Secret name/],
    ['unknown BMC scheme', (s) => (s.bmc.address = 'foo://host'), 'spec.bmc.address', /redfish-virtualmedia/],
    ['bad BMC port', (s) => (s.bmc.address = 'ipmi://10.0.0.1:70000'), 'spec.bmc.address', /port/i],
    ['bad BMC host', (s) => (s.bmc.address = 'ipmi://bad_host!'), 'spec.bmc.address', /host/i],
    ['empty BMC address', (s) => (s.bmc.address = ''), 'spec.bmc.address', /.+/],
    ['credentialsName not a name', (s) => (s.bmc.credentialsName = 'Bad Name'), 'spec.bmc.credentialsName', /Secret name/],
    ['credentialsName missing', (s) => delete s.bmc.credentialsName, 'spec.bmc.credentialsName', /required/i],
    ['disableCertificateVerification not bool', (s) => (s.bmc.disableCertificateVerification = 'yes'), 'spec.bmc.disableCertificateVerification', /boolean/i],
    ['bad MAC', (s) => (s.bootMACAddress = '00:11:22:33:44'), 'spec.bootMACAddress', /aa:bb:cc:dd:ee:ff|MAC/i],
    ['multicast MAC', (s) => (s.bootMACAddress = '01:00:5e:00:00:01'), 'spec.bootMACAddress', /multicast/i],
    ['fake BMC without MAC', (s) => { s.bmc.address = 'fake://n0'; delete s.bootMACAddress; }, 'spec.bootMACAddress', /requires a boot MAC/],
    ['bootMode unknown', (s) => (s.bootMode = 'BIOS'), 'spec.bootMode', /"UEFI", "UEFISecureBoot", "legacy"/],
    ['secure boot on IPMI', (s) => { s.bmc.address = 'ipmi://10.0.0.1'; s.bootMode = 'UEFISecureBoot'; }, 'spec.bootMode', /not supported by BMC type ipmi/],
    ['online missing', (s) => delete s.online, 'spec.online', /required/i],
    ['online not bool', (s) => (s.online = 'true'), 'spec.online', /boolean/i],
    ['image url not http', (s) => (s.image.url = 'ftp://x/y.img'), 'spec.image.url', /http/],
    ['image url with credentials', (s) => (s.image.url = 'http://u:p@x/y.img'), 'spec.image.url', /credentials/],
    ['image url with port 0', (s) => (s.image.url = 'http://images.example:0/y.img'), 'spec.image.url', /port 0 is out of range/],
    ['image url with port > 65535', (s) => (s.image.url = 'https://images.example:70000/y.img'), 'spec.image.url', /out of range/],
    ['image url with an empty host', (s) => (s.image.url = 'http://:8080/y.img'), 'spec.image.url', /host is empty/],
    ['image url with a bad IPv4 host', (s) => (s.image.url = 'http://300.1.1.1/y.img'), 'spec.image.url', /not a valid IPv4/],
    ['image url oci:// without a repository', (s) => (s.image.url = 'oci://quay.example'), 'spec.image.url', /names no repository/],
    ['image url file://', (s) => (s.image.url = 'file:///images/y.img'), 'spec.image.url', /conductor/],
    ['checksum URL with port 0', (s) => (s.image.checksum = 'http://images.example:0/y.sha256'), 'spec.image.checksum', /out of range/],
    ['image checksum missing', (s) => delete s.image.checksum, 'spec.image.checksum', /required unless format is live-iso/],
    ['image checksum not hex', (s) => (s.image.checksum = 'z'.repeat(64)), 'spec.image.checksum', /hexadecimal/],
    ['image checksum wrong length', (s) => (s.image.checksum = 'a'.repeat(40)), 'spec.image.checksum', /sha256 digest has 64/],
    ['auto checksum unknown length', (s) => { s.image.checksumType = 'auto'; s.image.checksum = 'a'.repeat(40); }, 'spec.image.checksum', /matches no supported algorithm/],
    ['checksumType unknown', (s) => (s.image.checksumType = 'sha1'), 'spec.image.checksumType', /"md5", "sha256", "sha512", "auto"/],
    ['image format unknown', (s) => (s.image.format = 'iso'), 'spec.image.format', /"live-iso"/],
    ['image unknown field', (s) => (s.image.size = 5), 'spec.image.size', /unexpected property/i],
    ['userData in another namespace', (s) => (s.userData.namespace = 'other'), 'spec.userData.namespace', /host's namespace "metal3"/],
    ['userData bad name', (s) => (s.userData.name = 'UPPER'), 'spec.userData.name', /Secret name/],
    ['networkData missing name', (s) => (s.networkData = {}), 'spec.networkData.name', /required/i],
    ['metaData in another namespace', (s) => (s.metaData = { name: 'md', namespace: 'x' }), 'spec.metaData.namespace', /host's namespace/],
    ['rootDeviceHints deviceName', (s) => (s.rootDeviceHints.deviceName = 'sda'), 'spec.rootDeviceHints.deviceName', /\/dev\//],
    ['rootDeviceHints hctl', (s) => (s.rootDeviceHints.hctl = '0:0'), 'spec.rootDeviceHints.hctl', /H:C:T:L/],
    ['rootDeviceHints negative size', (s) => (s.rootDeviceHints.minSizeGigabytes = -1), 'spec.rootDeviceHints.minSizeGigabytes', /0/],
    ['rootDeviceHints rotational', (s) => (s.rootDeviceHints.rotational = 'no'), 'spec.rootDeviceHints.rotational', /boolean/i],
    ['automatedCleaningMode unknown', (s) => (s.automatedCleaningMode = 'always'), 'spec.automatedCleaningMode', /"metadata", "disabled"/],
    ['externallyProvisioned not bool', (s) => (s.externallyProvisioned = 1), 'spec.externallyProvisioned', /boolean/i],
    ['consumerRef unknown field', (s) => (s.consumerRef = { foo: 'x' }), 'spec.consumerRef.foo', /unexpected property/i],
    ['raid level unsupported', (s) => (s.raid = { hardwareRAIDVolumes: [{ level: '7' }] }), 'spec.raid.hardwareRAIDVolumes[0].level', /unsupported RAID level "7"; accepted: 0, 1, 2, 5, 6, 1\+0/],
    ['software raid level unsupported', (s) => (s.raid = { hardwareRAIDVolumes: null, softwareRAIDVolumes: [{ level: '5' }] }), 'spec.raid.softwareRAIDVolumes[0].level', /accepted: 0, 1, 1\+0/],
    ['raid both kinds', (s) => (s.raid = { hardwareRAIDVolumes: [{ level: '1' }], softwareRAIDVolumes: [{ level: '1' }] }), 'spec.raid', /cannot both be set/],
    ['raid volume size zero', (s) => (s.raid = { hardwareRAIDVolumes: [{ level: '1', sizeGibibytes: 0 }] }), 'spec.raid.hardwareRAIDVolumes[0].sizeGibibytes', /at least 1/],
    ['firmware flag unknown', (s) => (s.firmware = { turboEnabled: true }), 'spec.firmware.turboEnabled', /accepted: simultaneousMultithreadingEnabled, sriovEnabled, virtualizationEnabled/],
    ['firmware flag not a boolean', (s) => (s.firmware = { sriovEnabled: 'yes' }), 'spec.firmware.sriovEnabled', /true or false/],
    ['customDeploy method not a step name', (s) => (s.customDeploy = { method: 'install coreos' }), 'spec.customDeploy.method', /deploy step name/],
    ['customDeploy with another field', (s) => (s.customDeploy = { method: 'install_coreos', args: {} }), 'spec.customDeploy', /object or null/],
    ['raid not an object', (s) => (s.raid = 'raid1'), 'spec.raid', /object|null/i],
    ['unknown top-level field', (s) => (s.bmcAddress = 'x'), 'spec.bmcAddress', /unexpected property/i],
  ];

  it.each(cases)('rejects %s, naming the field', (_what, mutate, field, reason) => {
    const errors = errorsFor(mutate);
    const error = errors.find((e) => e.field === field);
    expect(error, `errors were ${JSON.stringify(errors)}`).toBeDefined();
    expect(error!.reason).toMatch(reason);
  });

  it('accepts a host without a BMC (Metal3: unmanaged), and disablePowerOff with online: true', () => {
    const { bmc: _bmc, ...noBmc } = good();
    const result = validateHostSpec(ref, { ...noBmc, image: { url: 'http://1.2.3.4/image.iso', format: 'live-iso' } });
    expect(result.ok).toBe(true);
    if (result.ok) expect(result.value.bmc).toBeUndefined();
    expect(validateHostSpec(ref, { ...good(), disablePowerOff: true, online: true }).ok).toBe(true);
  });

  it('reads bmc {address: "", credentialsName: ""} (a Go client\'s host without a BMC) as unmanaged, and one empty field as an error', () => {
    const result = validateHostSpec(ref, { ...good(), bmc: { address: '', credentialsName: '' } });
    expect(result.ok).toBe(true);
    if (result.ok) {
      expect(result.value.spec.bmc).toBeUndefined();
      expect(result.value.bmc).toBeUndefined();
    }
    expect(errorsFor((s) => (s.bmc.address = ''))).toEqual([
      { field: 'spec.bmc.address', reason: expect.stringMatching(/is empty while spec\.bmc\.credentialsName is set: give both, or neither/) },
    ]);
    expect(errorsFor((s) => (s.bmc.credentialsName = ''))).toEqual([
      { field: 'spec.bmc.credentialsName', reason: expect.stringMatching(/is empty while spec\.bmc\.address is set/) },
    ]);
  });

  it('accepts every BareMetalHost field of Metal3, deprecated taints and networkInterfaces included', () => {
    const extra = { taints: [{ key: 'k', value: 'v', effect: 'NoSchedule' }], networkInterfaces: [{ macAddress: '52:54:00:00:00:01' }] };
    expect(validateHostSpec(ref, { ...good(), ...extra }).ok).toBe(true);
    expect(validateHostSpec(ref, { ...good(), taints: null, networkInterfaces: null }).ok).toBe(true);
  });

  it('accepts the empty raid, firmware and customDeploy values Metal3 manifests and Go clients carry, and valid RAID volumes and firmware flags', () => {
    const empties: Record<string, unknown>[] = [
      { raid: null, firmware: null, customDeploy: null },
      { raid: {}, firmware: {}, customDeploy: {} },
      { raid: { hardwareRAIDVolumes: null, softwareRAIDVolumes: null } },
      { raid: { hardwareRAIDVolumes: [], softwareRAIDVolumes: [] } },
      { customDeploy: { method: '' } },
      { firmware: { sriovEnabled: null } },
      // Not empty, and valid: applied while preparing (host-settings.ts).
      { raid: { hardwareRAIDVolumes: [{ level: '1', sizeGibibytes: 100 }], softwareRAIDVolumes: [] } },
      { raid: { hardwareRAIDVolumes: null, softwareRAIDVolumes: [{ level: '1' }] } },
      { firmware: { virtualizationEnabled: false, sriovEnabled: true } },
    ];
    for (const extra of empties) {
      const result = validateHostSpec(ref, { ...good(), ...extra });
      expect(result.ok, JSON.stringify(extra)).toBe(true);
    }
  });

  it('accepts a live-iso without checksum and a checksum-file URL', () => {
    const iso = good();
    iso.image = { url: 'https://images.example/live.iso', format: 'live-iso' };
    expect(validateHostSpec(ref, iso).ok).toBe(true);
    const url = good();
    url.image = { url: 'http://x/img.qcow2', checksum: 'http://x/img.qcow2.sha256sum', format: 'qcow2' };
    expect(validateHostSpec(ref, url).ok).toBe(true);
  });

  it('reports every problem at once', () => {
    const errors = errorsFor((s) => {
      s.bmc.address = 'nope://x';
      s.image.checksum = 'xyz';
    });
    expect(errors.map((e) => e.field).sort()).toEqual(['spec.bmc.address', 'spec.image.checksum']);
  });
});

describe('Ironic node name length', () => {
  const ns = 'metal3-fleet-a';
  const longest = 'n'.repeat(255 - ns.length - 1);
  const spec = () => ({ ...good(), userData: { name: 'node-0-user-data' } });

  it('accepts a name whose node name namespace~name is exactly 255 characters', () => {
    expect(validateHostRef({ namespace: ns, name: longest }).ok).toBe(true);
    expect(validateHostSpec({ namespace: ns, name: longest }, spec()).ok).toBe(true);
  });

  it('refuses one character more, on metadata.name, saying the limit (API and CRD paths)', () => {
    const ref = { namespace: ns, name: `${longest}n` };
    for (const result of [validateHostRef(ref), validateHostSpec(ref, spec())]) {
      expect(result.ok).toBe(false);
      if (result.ok) continue;
      const error = result.errors.find((e) => e.field === 'metadata.name');
      expect(error?.reason).toMatch(/Ironic allows 255/);
      expect(error?.reason).toContain(`at most ${255 - ns.length - 1} characters`);
    }
  });

  it('a Kubernetes-valid name (253) in a 63-character namespace is refused', () => {
    const result = validateHostRef({ namespace: 'a'.repeat(63), name: 'b'.repeat(253) });
    expect(!result.ok && result.errors[0]!.reason).toMatch(/would be 317, and Ironic allows 255/);
  });
});

describe('validateHostRef', () => {
  it('accepts Kubernetes names and rejects others with the field', () => {
    expect(validateHostRef({ namespace: 'metal3', name: 'worker-0.rack1' }).ok).toBe(true);
    const ns = validateHostRef({ namespace: 'Metal3', name: 'x' });
    expect(!ns.ok && ns.errors[0]!.field).toBe('metadata.namespace');
    const name = validateHostRef({ namespace: 'ok', name: 'a/b' });
    expect(!name.ok && name.errors[0]!.field).toBe('metadata.name');
  });
});

describe('string limits', () => {
  /** Paths of every string in a schema that has no maxLength. */
  function unbounded(schema: Record<string, any>, path: string): string[] {
    if (schema.type === 'string') return schema.maxLength === undefined ? [path] : [];
    const out: string[] = [];
    for (const [k, v] of Object.entries(schema.properties ?? {})) out.push(...unbounded(v as Record<string, any>, `${path}.${k}`));
    if (schema.items) out.push(...unbounded(schema.items, `${path}[]`));
    for (const m of schema.anyOf ?? []) if (m.const === undefined) out.push(...unbounded(m, path));
    return out;
  }

  it('every string of the spec, the status, the hardware details and the API requests has a maxLength', () => {
    const schemas = { spec: HostSpecSchema, status: HostStatusSchema, hardware: HardwareDetailsSchema, body: HostInputSchema, query: ListQuerySchema, path: PowerOffParamsSchema, pause: PauseBodySchema };
    for (const [name, schema] of Object.entries(schemas)) expect(unbounded(schema, name)).toEqual([]);
  });

  const cases: [string, (s: Record<string, any>) => void, string, number][] = [
    ['description', (s) => (s.description = 'd'.repeat(4097)), 'spec.description', 4096],
    ['architecture', (s) => (s.architecture = 'a'.repeat(65)), 'spec.architecture', 64],
    ['consumerRef.name', (s) => (s.consumerRef = { name: 'n'.repeat(254) }), 'spec.consumerRef.name', 253],
    ['rootDeviceHints.model', (s) => (s.rootDeviceHints.model = 'm'.repeat(256)), 'spec.rootDeviceHints.model', 255],
    ['preprovisioningNetworkDataName', (s) => (s.preprovisioningNetworkDataName = 'p'.repeat(254)), 'spec.preprovisioningNetworkDataName', 253],
  ];
  it.each(cases)('refuses a %s longer than its limit, saying the limit', (_what, mutate, field, limit) => {
    const error = errorsFor(mutate).find((e) => e.field === field);
    expect(error?.reason).toMatch(new RegExp(`less or equal to ${limit}`));
  });
});

describe('status values of Metal3', () => {
  it('accepts the operational statuses and error types Metal3 writes ("", servicing, servicing error, discovered, delayed)', () => {
    for (const [operationalStatus, errorType] of [['', ''], ['servicing', ''], ['error', 'servicing error'], ['discovered', ''], ['delayed', '']]) {
      const status = { ...emptyStatus(), operationalStatus, errorType };
      expect(schemaErrors(HostStatusSchema, status, 'status'), `${operationalStatus}/${errorType}`).toEqual([]);
    }
  });
});
