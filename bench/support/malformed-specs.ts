/**
 * Bad host specs for the malformed-input corpus: one hand-written case per
 * validation rule, and generated ones (fast-check mutations of a good spec:
 * a wrong type, a string past its limit, an unknown field, a value no enum
 * has, at any path). Each names the field its error must name.
 */
import fc from 'fast-check';
import type { TSchema } from '@sinclair/typebox';
import { HostSpecSchema } from '../../model/host';

/** A spec mutation and the field the refusal must name. */
export interface SpecCase {
  name: string;
  mutate: (spec: Record<string, any>) => void;
  field: string;
}

/** A good spec with every field that has rules of its own; the corpus mutates copies of it. */
export function fullSpec(base: { address: string; credentialsName: string; mac: string; namespace: string }): Record<string, any> {
  return {
    bmc: { address: base.address, credentialsName: base.credentialsName, disableCertificateVerification: false },
    bootMACAddress: base.mac,
    bootMode: 'UEFI',
    online: true,
    rootDeviceHints: { deviceName: '/dev/sda', hctl: '0:0:0:0', model: 'QEMU HARDDISK', minSizeGigabytes: 10, rotational: false },
    automatedCleaningMode: 'disabled',
    inspectionMode: 'agent',
    consumerRef: { apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta1', kind: 'Metal3Machine', name: 'm-0', namespace: base.namespace },
    description: 'rack 4, slot 2',
    architecture: 'x86_64',
    externallyProvisioned: false,
  };
}

const IMAGE = { url: 'http://images.example/os.qcow2', checksum: 'a'.repeat(64), checksumType: 'sha256', format: 'qcow2' };
const redfish = (path: string) => (s: Record<string, any>) => (s.bmc.address = `redfish://10.0.0.9${path}`);
const image = (over: Record<string, unknown>) => (s: Record<string, any>) => (s.image = { ...IMAGE, ...over });

/** One case per rule of the spec (model/validate.ts, model/bmc.ts, model/image.ts, the schema). */
export const SPEC_CASES: SpecCase[] = [
  { name: 'unknown BMC scheme', mutate: (s) => (s.bmc.address = 'foo://10.0.0.9'), field: 'spec.bmc.address' },
  { name: 'empty BMC address', mutate: (s) => (s.bmc.address = ''), field: 'spec.bmc.address' },
  { name: 'BMC port 0', mutate: (s) => (s.bmc.address = 'ipmi://10.0.0.9:0'), field: 'spec.bmc.address' },
  { name: 'BMC port 70000', mutate: (s) => (s.bmc.address = 'ipmi://10.0.0.9:70000'), field: 'spec.bmc.address' },
  { name: 'BMC address with credentials', mutate: (s) => (s.bmc.address = 'redfish://admin:pw@10.0.0.9/redfish/v1/Systems/1'), field: 'spec.bmc.address' },
  { name: 'Redfish without a system path', mutate: redfish(''), field: 'spec.bmc.address' },
  { name: 'Redfish service root /redfish/v1', mutate: redfish('/redfish/v1'), field: 'spec.bmc.address' },
  { name: 'Redfish /redfish', mutate: redfish('/redfish'), field: 'spec.bmc.address' },
  { name: 'Redfish Systems collection', mutate: redfish('/redfish/v1/Systems'), field: 'spec.bmc.address' },
  { name: "Redfish path with '..'", mutate: redfish('/redfish/v1/Systems/../Managers/1'), field: 'spec.bmc.address' },
  { name: 'Redfish path percent-encoded ..', mutate: redfish('/redfish/v1/Systems/%2e%2e'), field: 'spec.bmc.address' },
  { name: 'Redfish path percent-encoded /', mutate: redfish('/redfish/v1/Systems/1%2F..%2FManagers'), field: 'spec.bmc.address' },
  { name: 'Redfish path below the system', mutate: redfish('/redfish/v1/Systems/1/Bios'), field: 'spec.bmc.address' },
  { name: 'BMC address with a query', mutate: (s) => (s.bmc.address = 'ipmi://10.0.0.9?cipher=3'), field: 'spec.bmc.address' },
  { name: 'BMC address with a space', mutate: (s) => (s.bmc.address = 'ipmi://10.0.0.9 '), field: 'spec.bmc.address' },
  { name: 'IPv6 BMC without brackets', mutate: (s) => (s.bmc.address = 'ipmi://fd00::9'), field: 'spec.bmc.address' },
  { name: 'BMC address past 2048 characters', mutate: (s) => (s.bmc.address = `ipmi://${'a'.repeat(2100)}`), field: 'spec.bmc.address' },
  { name: 'credentialsName not a name', mutate: (s) => (s.bmc.credentialsName = 'Bad Name'), field: 'spec.bmc.credentialsName' },
  { name: 'credentialsName missing', mutate: (s) => delete s.bmc.credentialsName, field: 'spec.bmc.credentialsName' },
  { name: 'credentialsName past 253', mutate: (s) => (s.bmc.credentialsName = 'c'.repeat(254)), field: 'spec.bmc.credentialsName' },
  { name: 'disableCertificateVerification not a boolean', mutate: (s) => (s.bmc.disableCertificateVerification = 'yes'), field: 'spec.bmc.disableCertificateVerification' },
  { name: 'bmc not an object', mutate: (s) => (s.bmc = 'ipmi://10.0.0.9'), field: 'spec.bmc' },
  { name: 'short MAC', mutate: (s) => (s.bootMACAddress = '00:11:22:33:44'), field: 'spec.bootMACAddress' },
  { name: 'multicast MAC', mutate: (s) => (s.bootMACAddress = '01:00:5e:00:00:01'), field: 'spec.bootMACAddress' },
  { name: 'MAC not a string', mutate: (s) => (s.bootMACAddress = 5), field: 'spec.bootMACAddress' },
  { name: 'bootMode unknown', mutate: (s) => (s.bootMode = 'BIOS'), field: 'spec.bootMode' },
  { name: 'secure boot on a BMC without it', mutate: (s) => (s.bootMode = 'UEFISecureBoot'), field: 'spec.bootMode' },
  { name: 'online missing', mutate: (s) => delete s.online, field: 'spec.online' },
  { name: 'online a string', mutate: (s) => (s.online = 'true'), field: 'spec.online' },
  { name: 'disablePowerOff with online false', mutate: (s) => Object.assign(s, { disablePowerOff: true, online: false }), field: 'spec.online' },
  { name: 'image URL ftp', mutate: image({ url: 'ftp://images.example/os.qcow2' }), field: 'spec.image.url' },
  { name: 'image URL port 0', mutate: image({ url: 'http://images.example:0/os.qcow2' }), field: 'spec.image.url' },
  { name: 'image URL port 65536', mutate: image({ url: 'https://images.example:65536/os.qcow2' }), field: 'spec.image.url' },
  { name: 'image URL empty host', mutate: image({ url: 'http:///os.qcow2' }), field: 'spec.image.url' },
  { name: 'image URL oci without a repository', mutate: image({ url: 'oci://quay.example' }), field: 'spec.image.url' },
  { name: 'image URL file', mutate: image({ url: 'file:///var/lib/ironic/os.qcow2' }), field: 'spec.image.url' },
  { name: 'image URL with credentials', mutate: image({ url: 'http://u:p@images.example/os.qcow2' }), field: 'spec.image.url' },
  { name: 'image checksum missing', mutate: image({ checksum: undefined }), field: 'spec.image.checksum' },
  { name: 'image checksum not hex', mutate: image({ checksum: 'z'.repeat(64) }), field: 'spec.image.checksum' },
  { name: 'image checksum wrong length', mutate: image({ checksum: 'a'.repeat(40) }), field: 'spec.image.checksum' },
  { name: 'checksum URL with port 0', mutate: image({ checksum: 'http://images.example:0/os.sha256' }), field: 'spec.image.checksum' },
  { name: 'checksumType unknown', mutate: image({ checksumType: 'sha1' }), field: 'spec.image.checksumType' },
  { name: 'image format unknown', mutate: image({ format: 'iso' }), field: 'spec.image.format' },
  { name: 'image unknown field', mutate: image({ size: 5 }), field: 'spec.image.size' },
  { name: 'ociAuthSecretName not a name', mutate: image({ ociAuthSecretName: 'Bad Name' }), field: 'spec.image.ociAuthSecretName' },
  { name: 'userData Secret in another namespace', mutate: (s) => (s.userData = { name: 'ud', namespace: 'elsewhere' }), field: 'spec.userData.namespace' },
  { name: 'userData Secret not a name', mutate: (s) => (s.userData = { name: 'UPPER' }), field: 'spec.userData.name' },
  { name: 'networkData without a name', mutate: (s) => (s.networkData = {}), field: 'spec.networkData.name' },
  { name: 'metaData name past 253', mutate: (s) => (s.metaData = { name: 'm'.repeat(254) }), field: 'spec.metaData.name' },
  { name: 'rootDeviceHints deviceName not /dev', mutate: (s) => (s.rootDeviceHints.deviceName = 'sda'), field: 'spec.rootDeviceHints.deviceName' },
  { name: 'rootDeviceHints hctl', mutate: (s) => (s.rootDeviceHints.hctl = '0:0'), field: 'spec.rootDeviceHints.hctl' },
  { name: 'rootDeviceHints negative size', mutate: (s) => (s.rootDeviceHints.minSizeGigabytes = -1), field: 'spec.rootDeviceHints.minSizeGigabytes' },
  { name: 'automatedCleaningMode unknown', mutate: (s) => (s.automatedCleaningMode = 'always'), field: 'spec.automatedCleaningMode' },
  { name: 'inspectionMode unknown', mutate: (s) => (s.inspectionMode = 'deep'), field: 'spec.inspectionMode' },
  { name: 'fast inspection without Redfish', mutate: (s) => (s.inspectionMode = 'fast'), field: 'spec.inspectionMode' },
  { name: 'provisioner unknown', mutate: (s) => (s.provisioner = 'pxe'), field: 'spec.provisioner' },
  { name: 'direct provisioner on a fake BMC', mutate: (s) => (s.provisioner = 'direct'), field: 'spec.provisioner' },
  { name: 'raid level unsupported', mutate: (s) => (s.raid = { hardwareRAIDVolumes: [{ level: '7' }] }), field: 'spec.raid.hardwareRAIDVolumes[0].level' },
  { name: 'firmware flag unknown', mutate: (s) => (s.firmware = { turboEnabled: true }), field: 'spec.firmware.turboEnabled' },
  { name: 'customDeploy method not a step name', mutate: (s) => (s.customDeploy = { method: 'install coreos' }), field: 'spec.customDeploy.method' },
  { name: 'description past 4096', mutate: (s) => (s.description = 'd'.repeat(5000)), field: 'spec.description' },
  { name: 'architecture past 64', mutate: (s) => (s.architecture = 'a'.repeat(100)), field: 'spec.architecture' },
  { name: 'consumerRef unknown field', mutate: (s) => (s.consumerRef.extra = 'x'), field: 'spec.consumerRef.extra' },
  { name: 'consumerRef name past 253', mutate: (s) => (s.consumerRef.name = 'n'.repeat(300)), field: 'spec.consumerRef.name' },
  { name: 'externallyProvisioned a number', mutate: (s) => (s.externallyProvisioned = 1), field: 'spec.externallyProvisioned' },
  { name: 'preprovisioningNetworkDataName past 253', mutate: (s) => (s.preprovisioningNetworkDataName = 'p'.repeat(300)), field: 'spec.preprovisioningNetworkDataName' },
  { name: 'unknown top-level field', mutate: (s) => (s.bmcAddress = 'ipmi://10.0.0.9'), field: 'spec.bmcAddress' },
];

interface Leaf {
  path: string[];
  schema: Record<string, any>;
}

/** The paths of `spec` with the schema of each. */
function leaves(schema: Record<string, any>, value: unknown, path: string[] = []): Leaf[] {
  const here: Leaf[] = path.length > 0 ? [{ path, schema }] : [];
  if (schema.type !== 'object' || typeof value !== 'object' || value === null) return here;
  return [...here, ...Object.entries(value).flatMap(([k, v]) => (schema.properties?.[k] ? leaves(schema.properties[k], v, [...path, k]) : []))];
}

/** The bad values a node of this schema can be given, with the field the refusal names. */
function badValues(leaf: Leaf): [value: unknown, field: string[]][] {
  const { schema, path } = leaf;
  const out: [unknown, string[]][] = [];
  if (Array.isArray(schema.anyOf)) out.push(['not-a-listed-value', path], [42, path]);
  else if (schema.type === 'string') {
    out.push([12345, path], [{ nested: true }, path]);
    if (schema.maxLength !== undefined) out.push(['x'.repeat(schema.maxLength + 1), path]);
  } else if (schema.type === 'boolean') out.push(['yes', path], [1, path]);
  else if (schema.type === 'integer') out.push(['ten', path], [1.5, path], ...(schema.minimum !== undefined ? ([[schema.minimum - 1, path]] as [unknown, string[]][]) : []));
  else if (schema.type === 'object') out.push(['a string', path], [[1, 2], path], [{ unknownField: 1 }, [...path, 'unknownField']]);
  return out;
}

/**
 * `count` cases from a seed: a path of the good spec and one of the bad values its schema
 * allows for it. Unknown fields are added beside what is there (`[...path, 'unknownField']`).
 */
export function generatedSpecCases(good: Record<string, any>, seed: number, count: number): SpecCase[] {
  const options = leaves(HostSpecSchema as unknown as TSchema, good).flatMap((leaf) => badValues(leaf).map(([value, field]) => ({ leaf, value, field })));
  const picks = fc.sample(fc.nat({ max: options.length - 1 }), { seed, numRuns: count });
  return picks.map((i) => {
    const { leaf, value, field } = options[i]!;
    const shown = typeof value === 'string' && value.length > 20 ? `${value.length} characters` : JSON.stringify(value);
    return {
      name: `generated: spec.${leaf.path.join('.')} = ${shown}`,
      field: `spec.${field.join('.')}`,
      mutate: (s) => {
        let node = s;
        for (const k of leaf.path.slice(0, -1)) node = node[k];
        const last = leaf.path.at(-1)!;
        if (field.length > leaf.path.length) node[last] = { ...node[last], unknownField: 1 };
        else node[last] = value;
      },
    };
  });
}
