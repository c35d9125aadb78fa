/**
 * The node settings a host's spec decides, brought in line before each step
 * that depends on them (BMO pushes them on every reconcile). Level-triggered:
 * the node is read, compared with what the spec wants, and only what differs
 * is written, in one PATCH; a node already in line costs one GET. So a spec
 * changed while the host waits to retry (automatedCleaningMode: disabled
 * after a failed clean) reaches the node before the next attempt.
 *
 * Settings only: driver and interfaces stay registration's (a deploy chooses
 * its own deploy interface), and a password Ironic masks cannot be compared
 * (a changed Secret registers the host again, the credentials check).
 */
import { log } from '@temporalio/activity';
import { parseBmcAddress } from '../../model/bmc';
import { bmcOf, type HostRef, type HostSpec } from '../../model/host';
import { effectiveRootDeviceHints } from '../../model/hardware-profile';
import { ironicDriverInfo } from '../../clients/ironic/driver-info';
import { DISABLE_POWER_OFF_MICROVERSION, type IronicClient, type JsonPatchOp } from '../../clients/ironic/client';
import { bootCapabilities, ironicRootDeviceHints } from '../../clients/ironic/node-spec';
import type { IronicNode } from '../../clients/ironic/types';
import type { SecretData, SecretReader } from '../../clients/secrets/secret-store';
import { operationFailed, type NodeDriver } from './node-driver';

/** What Ironic shows in place of a secret value in driver_info. */
const MASKED = '******';

/** The node properties and flags the spec decides (those registration writes too). */
export interface WantedProperties {
  capabilities: string;
  rootDevice?: Record<string, unknown>;
  cpuArch?: string;
  automatedClean: boolean;
}

export function wantedProperties(spec: HostSpec): WantedProperties {
  const hints = effectiveRootDeviceHints(spec);
  if ('error' in hints) throw operationFailed(hints.error);
  const rootDevice = ironicRootDeviceHints(hints.hints);
  return {
    capabilities: bootCapabilities(spec),
    ...(rootDevice ? { rootDevice } : {}),
    ...(spec.architecture ? { cpuArch: spec.architecture } : {}),
    automatedClean: (spec.automatedCleaningMode ?? 'metadata') !== 'disabled',
  };
}

/** The PATCH operations that bring the node's properties and automated_clean to `wanted`; none when they already are. */
export function propertyOps(node: IronicNode, wanted: WantedProperties): JsonPatchOp[] {
  const ops: JsonPatchOp[] = [];
  if (node.properties.capabilities !== wanted.capabilities) ops.push({ op: 'add', path: '/properties/capabilities', value: wanted.capabilities });
  if (wanted.rootDevice && JSON.stringify(node.properties.root_device) !== JSON.stringify(wanted.rootDevice)) {
    ops.push({ op: 'add', path: '/properties/root_device', value: wanted.rootDevice });
  } else if (!wanted.rootDevice && node.properties.root_device !== undefined) {
    ops.push({ op: 'remove', path: '/properties/root_device' });
  }
  // As Metal3: set when given; unset leaves what inspection found.
  if (wanted.cpuArch && node.properties.cpu_arch !== wanted.cpuArch) ops.push({ op: 'add', path: '/properties/cpu_arch', value: wanted.cpuArch });
  if (node.automated_clean !== wanted.automatedClean) ops.push({ op: 'add', path: '/automated_clean', value: wanted.automatedClean });
  return ops;
}

/** Whether the node's driver_info differs from `wanted` in anything Ironic shows (masked values cannot be compared). */
export function driverInfoDiffers(current: Record<string, unknown>, wanted: Record<string, unknown>): boolean {
  const keys = new Set([...Object.keys(current), ...Object.keys(wanted)]);
  for (const key of keys) {
    if (current[key] === MASKED) continue;
    if (String(current[key] ?? '') !== String(wanted[key] ?? '')) return true;
  }
  return false;
}

export interface SyncSettingsInput {
  ref: HostRef;
  spec: HostSpec;
  nodeId: string;
}

export interface SyncSettingsResult {
  /** The node fields written (empty: the node already matched the spec). */
  changed: string[];
}

/** The first read of a step that brings the node's settings in line with `spec` (none without a spec). */
export type FirstRead = (ref: HostRef, spec: HostSpec | undefined) => ((nodeId: string) => Promise<IronicNode>) | undefined;

/** A step activity's input: with `settings`, the step brings the node's settings in line with its first read. */
export interface InStepSettings {
  /** The host's spec, whose node settings the step applies (the host workflow no longer checks them before it). */
  settings?: HostSpec;
}

export interface NodeSettingsDeps {
  ironic: IronicClient;
  secrets: SecretReader;
  /** Where BMC credentials are read when not from `secrets`: a site's own store. */
  bmcSecrets?: SecretReader;
  redfishVerifyCa?: string;
  driver: NodeDriver;
}

export function createNodeSettingsActivities(deps: NodeSettingsDeps) {
  const { ironic, secrets } = deps;

  /** The driver_info the spec wants, or undefined when it cannot be told here (the step then uses what the node has). */
  async function wantedDriverInfo(ref: HostRef, spec: HostSpec): Promise<Record<string, unknown> | undefined> {
    const bmc = bmcOf(spec);
    const access = parseBmcAddress(bmc.address);
    if (!access.ok) return undefined;
    let data: SecretData | undefined;
    try {
      data = await (deps.bmcSecrets ?? secrets).read(ref.namespace, bmc.credentialsName);
    } catch (err) {
      // The secret store away (an API server outage) must not hold the step: the node keeps the credentials it has.
      log.warn('BMC credentials not compared with the node: the Secret could not be read', { host: `${ref.namespace}/${ref.name}`, error: err instanceof Error ? err.message : String(err) });
      return undefined;
    }
    const username = data?.username;
    const password = data?.password;
    if (typeof username !== 'string' || typeof password !== 'string') return undefined;
    return ironicDriverInfo(access.value, { username, password }, { disableCertificateVerification: bmc.disableCertificateVerification, redfishVerifyCa: deps.redfishVerifyCa });
  }

  /**
   * Reads the node (with the rest of it, at the version that shows disable_power_off where this Ironic has the
   * field: one GET) and writes what differs from the spec in one PATCH. Returns the node as it then is.
   */
  async function bringInLine(input: SyncSettingsInput): Promise<{ node: IronicNode; changed: string[] }> {
    const { ref, spec, nodeId } = input;
    // As BMO: the node's own disable_power_off where this Ironic has the field.
    const powerOffVersion = (await ironic.supports(DISABLE_POWER_OFF_MICROVERSION)) ? DISABLE_POWER_OFF_MICROVERSION : undefined;
    const node = await deps.driver.mustGetNode(nodeId, powerOffVersion);
    const ops = propertyOps(node, wantedProperties(spec));
    const driverInfo = await wantedDriverInfo(ref, spec);
    if (driverInfo && driverInfoDiffers(node.driver_info, driverInfo)) ops.push({ op: 'add', path: '/driver_info', value: driverInfo });
    const powerOff = powerOffVersion ? node.disable_power_off === true : undefined;
    const wantedPowerOff = spec.disablePowerOff === true;
    const powerOffOp = powerOff !== undefined && powerOff !== wantedPowerOff;
    if (powerOffOp) ops.push({ op: 'add', path: '/disable_power_off', value: wantedPowerOff });
    if (ops.length === 0) return { node, changed: [] };
    // Ironic answers a PATCH with the node as written: the caller's next decision needs no other read.
    const written = await ironic.patchNode(nodeId, ops, powerOffOp ? DISABLE_POWER_OFF_MICROVERSION : undefined);
    // Field names only: driver_info's values hold the password.
    return { node: written, changed: ops.map((o) => o.path.slice(1)) };
  }

  /** The activity the host workflow ran before a step (kept for runs that began before the step did it itself). */
  async function syncNodeSettings(input: SyncSettingsInput): Promise<SyncSettingsResult> {
    return { changed: (await bringInLine(input)).changed };
  }

  /**
   * A step activity's first read of the node for `drive`, with the spec's settings brought in line: the check
   * the workflow ran as an activity of its own before the step, now one read where it was two.
   */
  const firstRead: FirstRead = (ref, spec) =>
    spec ? async (nodeId: string): Promise<IronicNode> => (await bringInLine({ ref, spec, nodeId })).node : undefined;

  return { syncNodeSettings, firstRead };
}
