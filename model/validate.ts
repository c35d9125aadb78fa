/**
 * Full validation of a host spec: the schema's structure first, then what a
 * schema cannot say (BMC grammar, MAC rules per BMC type, checksum length per
 * algorithm, secret namespaces). Pure and deterministic, so the API, the CRD
 * shim and the host workflow's update validator all run exactly this.
 */
import { Value } from '@sinclair/typebox/value';
import type { TSchema } from '@sinclair/typebox';
import { BMC_TYPE_TABLE, parseBmcAddress, validateBootMac, type BmcAccess } from './bmc';
import type { FieldError, Result } from './field-error';
import { HostSpecSchema, type HostRef, type HostSpec, type SecretReference } from './host';
import { validateImage } from './image';
import { customDeployErrors, customDeployMethod } from './custom-deploy';
import { nodeNameErrors } from './host-ref';
import { normalizeHostSpec } from './spec-normal-form';
import { hostSettingsErrors } from './host-settings';
import { hostDhcpErrors } from './host-dhcp';

export interface ValidatedSpec {
  /** The spec in its normal form (spec-normal-form.ts: lower-case MAC). */
  spec: HostSpec;
  /** Absent for a host without a BMC (Metal3's `unmanaged`). */
  bmc?: BmcAccess;
}

const SECRET_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

const A_TYPE: Record<string, string> = { object: 'an object', null: 'null', string: 'a string', array: 'an array', boolean: 'true or false', integer: 'an integer', number: 'a number' };

function describeSchemaError(schema: TSchema, message: string): string {
  const options = (schema.anyOf as TSchema[] | undefined)?.map((s) => s.const).filter((c) => typeof c === 'string');
  if (options && options.length > 0) return `must be one of ${options.map((o) => JSON.stringify(o)).join(', ')}`;
  const kinds = (schema.anyOf as TSchema[] | undefined)?.map((s) => A_TYPE[String(s.type)]).filter(Boolean);
  if (kinds && kinds.length > 0) return `must be ${kinds.join(' or ')}`;
  if (/^expected required property/i.test(message)) return 'is required';
  return message.charAt(0).toLowerCase() + message.slice(1);
}

function pointerToField(prefix: string, pointer: string): string {
  const parts = pointer.split('/').filter(Boolean).map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  const path = [prefix, ...parts.map((p) => (/^\d+$/.test(p) ? `[${p}]` : p))].filter(Boolean);
  return (path.join('.') || '(root)').replace(/\.\[/g, '[');
}

/** Structural errors from the schema, one per field (the first, most specific). */
export function schemaErrors(schema: TSchema, value: unknown, prefix: string): FieldError[] {
  const seen = new Set<string>();
  const out: FieldError[] = [];
  for (const e of Value.Errors(schema, value)) {
    const field = pointerToField(prefix, e.path);
    if (seen.has(field)) continue;
    seen.add(field);
    out.push({ field, reason: describeSchemaError(e.schema, e.message) });
  }
  return out;
}

function validateSecretRef(field: string, ref: SecretReference, host: HostRef): FieldError[] {
  const errors: FieldError[] = [];
  if (!SECRET_NAME.test(ref.name)) {
    errors.push({ field: `${field}.name`, reason: `"${ref.name}" is not a valid Secret name (lower-case DNS subdomain)` });
  }
  if (ref.namespace !== undefined && ref.namespace !== '' && ref.namespace !== host.namespace) {
    errors.push({
      field: `${field}.namespace`,
      reason: `the Secret must be in the host's namespace "${host.namespace}", not "${ref.namespace}"`,
    });
  }
  return errors;
}

function validateRootDeviceHints(spec: HostSpec): FieldError[] {
  const hints = spec.rootDeviceHints;
  const errors: FieldError[] = [];
  if (hints?.deviceName !== undefined && !hints.deviceName.startsWith('/dev/')) {
    errors.push({
      field: 'spec.rootDeviceHints.deviceName',
      reason: `"${hints.deviceName}" must be a Linux device path starting with /dev/ (e.g. /dev/sda or /dev/disk/by-path/...)`,
    });
  }
  if (hints?.hctl !== undefined && !/^\d+:\d+:\d+:\d+$/.test(hints.hctl)) {
    errors.push({ field: 'spec.rootDeviceHints.hctl', reason: `"${hints.hctl}" must be four numbers H:C:T:L, e.g. 0:0:0:0` });
  }
  return errors;
}

const DIRECT_ADDRESSES = 'a Redfish address (redfish://, redfish-virtualmedia://, idrac-…, ilo5-…) or an IPMI address (ipmi://)';

/**
 * `provisioner: direct` (metalflow's): no Ironic, metalflow speaks to the BMC
 * itself. So the BMC must be one we can speak to, and an image can only be a
 * live ISO booted from Redfish virtual media; what it cannot do is refused
 * here rather than silently skipped.
 */
function validateDirect(spec: HostSpec, bmc: BmcAccess): FieldError[] {
  const family = BMC_TYPE_TABLE[bmc.type].family;
  if (family === 'fake') {
    return [
      {
        field: 'spec.provisioner',
        reason: `direct speaks to the BMC itself and needs ${DIRECT_ADDRESSES}; ${bmc.address} is a fake BMC that exists only in Ironic's fake-hardware driver (use provisioner ironic)`,
      },
    ];
  }
  const errors: FieldError[] = [];
  if (spec.image && family === 'ipmi') {
    errors.push({
      field: 'spec.image',
      reason: `provisioner direct boots images from virtual media, which an IPMI BMC (${bmc.address}) does not have; remove the image, use a Redfish address, or use provisioner ironic`,
    });
  } else if (spec.image && spec.image.format !== 'live-iso') {
    errors.push({
      field: 'spec.image.format',
      reason: `provisioner direct accepts only format "live-iso" (an ISO booted from virtual media, nothing written to disk), not ${spec.image.format === undefined ? 'an unset format' : `"${spec.image.format}"`}; use provisioner ironic to write disk images`,
    });
  }
  if (customDeployMethod(spec)) {
    errors.push({ field: 'spec.customDeploy', reason: "provisioner direct has no deploy agent to run a custom deploy step; use provisioner ironic (Ironic's custom-agent deploy interface)" });
  }
  if (spec.bootMode === 'UEFISecureBoot') {
    errors.push({ field: 'spec.bootMode', reason: 'provisioner direct sets UEFI or legacy boot only, not UEFISecureBoot; use UEFI or provisioner ironic' });
  }
  // userData, networkData and metaData go on a config drive beside the ISO (direct-operations.ts).
  return errors;
}

export function validateHostSpec(host: HostRef, input: unknown): Result<ValidatedSpec> {
  const structural = schemaErrors(HostSpecSchema, input, 'spec');
  if (structural.length > 0) return { ok: false, errors: structural };
  // JSON copy: structuredClone does not exist in the workflow sandbox, and a spec is plain JSON.
  const spec = JSON.parse(JSON.stringify(input)) as HostSpec;
  const errors: FieldError[] = [...nodeNameErrors(host)];
  // Go clients serialise a host without a BMC as bmc: {address: "", credentialsName: ""}: Metal3's unmanaged host.
  if (spec.bmc && spec.bmc.address === '' && spec.bmc.credentialsName === '') delete spec.bmc;
  for (const [key, other] of [['address', 'credentialsName'], ['credentialsName', 'address']] as const) {
    if (spec.bmc && spec.bmc[key] === '') {
      errors.push({ field: `spec.bmc.${key}`, reason: `is empty while spec.bmc.${other} is set: give both, or neither for a host without a BMC (unmanaged)` });
    }
  }

  const bmc = spec.bmc && spec.bmc.address !== '' ? parseBmcAddress(spec.bmc.address) : undefined;
  if (bmc && !bmc.ok) errors.push(...bmc.errors);
  if (spec.bmc && spec.bmc.credentialsName !== '' && !SECRET_NAME.test(spec.bmc.credentialsName)) {
    errors.push({
      field: 'spec.bmc.credentialsName',
      reason: `"${spec.bmc.credentialsName}" is not a valid Secret name (lower-case DNS subdomain)`,
    });
  }
  if (bmc?.ok) {
    const mac = validateBootMac(bmc.value, spec.bootMACAddress);
    if (!mac.ok) errors.push(...mac.errors);
    if (spec.bootMode === 'UEFISecureBoot' && !bmc.value.capabilities.supportsSecureBoot) {
      errors.push({
        field: 'spec.bootMode',
        reason: `UEFISecureBoot is not supported by BMC type ${bmc.value.type}; use UEFI or a Redfish-based address`,
      });
    }
  }
  if (bmc?.ok && spec.inspectionMode === 'fast' && BMC_TYPE_TABLE[bmc.value.type].family !== 'redfish') {
    errors.push({
      field: 'spec.inspectionMode',
      reason: `fast (out-of-band) inspection reads the inventory from a Redfish BMC; BMC type ${bmc.value.type} has none: use "agent" or "disabled", or a Redfish address`,
    });
  }
  if (spec.disablePowerOff && !spec.online) {
    errors.push({ field: 'spec.online', reason: 'must be true when spec.disablePowerOff is set (the host is never powered off, only rebooted)' });
  }
  const oci = spec.image?.ociAuthSecretName;
  if (oci !== undefined && !SECRET_NAME.test(oci)) {
    errors.push({ field: 'spec.image.ociAuthSecretName', reason: `"${oci}" is not a valid Secret name (lower-case DNS subdomain)` });
  }
  if (spec.image) errors.push(...validateImage(spec.image));
  for (const key of ['userData', 'networkData', 'metaData'] as const) {
    const ref = spec[key];
    if (ref) errors.push(...validateSecretRef(`spec.${key}`, ref, host));
  }
  errors.push(...validateRootDeviceHints(spec));
  errors.push(...hostSettingsErrors(spec));
  errors.push(...customDeployErrors(spec));
  if (spec.dhcp) errors.push(...hostDhcpErrors(spec.dhcp, host, spec.bootMACAddress));
  if (spec.provisioner === 'direct' && bmc?.ok) errors.push(...validateDirect(spec, bmc.value));

  if (errors.length > 0 || (bmc && !bmc.ok)) return { ok: false, errors };
  return { ok: true, value: { spec: normalizeHostSpec(spec), bmc: bmc?.ok ? bmc.value : undefined } };
}

