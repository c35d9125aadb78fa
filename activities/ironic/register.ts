/**
 * Registration: the host's Ironic node created or brought in line with the
 * spec (driver, BMC access, interfaces, boot MAC port), then managed,
 * inspected and prepared (left manageable, as BMO leaves it).
 */
import { parseBmcAddress } from '../../model/bmc';
import { ironicDriverInfo } from '../../clients/ironic/driver-info';
import { bmcOf, type HardwareDetails, type HostRef, type HostSpec } from '../../model/host';
import { ironicNodeName } from '../../model/host-ref';
import { DISABLE_POWER_OFF_MICROVERSION, IronicError, type IronicClient, type JsonPatchOp } from '../../clients/ironic/client';
import { hardwareFromInventory, hardwareFromProperties } from '../../clients/ironic/hardware';
import { nodeInterfaces, type InspectionPreference } from '../../clients/ironic/node-spec';
import type { IronicNode } from '../../clients/ironic/types';
import type { SecretReader } from '../../clients/secrets/secret-store';
import { readCredentials, readSecretKey } from '../common/secret-key';
import { parseConfigMapping } from '../../model/config-data';
import { deployChosenInterface } from './instance-info';
import { CancelledFailure, log } from '@temporalio/activity';
import { activityContext, pause } from '../common/activity-context';
import { createRamdiskCheck } from './ramdisk';
import { propertyOps, wantedProperties, type FirstRead, type InStepSettings } from './node-settings';
import { inspectionFailedForIronic, resendDelayMs, TRANSIENT_RESENDS } from './transient';
import { automatedCleanOps, operationFailed, OWNER_KEY, ownerMark, registeredSummary, summary, type NodeDriver, type NodeSummary, type NodeTarget, type Plan, type RegisteredNode, type Step } from './node-driver';

/** How long a hardware type's enabled interfaces are taken as read (registration reads them). */
const DRIVER_CACHE_MS = 60_000;

/** Ironic's states that allow a node's driver and interfaces to change (outside maintenance); its conductor's update_node. */
const INTERFACES_UPDATABLE: readonly string[] = ['enroll', 'inspecting', 'inspect wait', 'manageable', 'available'];

export interface RegisterDeps {
  ironic: IronicClient;
  secrets: SecretReader;
  /** Where BMC credentials are read when not from `secrets`: a site's own store. */
  bmcSecrets?: SecretReader;
  inspection: InspectionPreference;
  /** `driver_info.redfish_verify_ca` for https Redfish nodes: a path on the conductor. */
  redfishVerifyCa?: string;
  driver: NodeDriver;
  firstRead: FirstRead;
  /** Brings a node read a moment ago to a power state (teardown.ts powerFrom): prepareNode's power-on. */
  powerFrom?: (node: IronicNode, on: boolean, key: string) => Promise<NodeSummary>;
}

/** Inspection: from manageable (made so first out of enroll or available) to manageable with the inventory. */
export const inspectPlan: Plan = (n, issued, unanswered) => {
  switch (n.provision_state) {
    case 'manageable':
      return issued.includes('inspect') ? { done: true } : { verb: 'inspect' };
    case 'inspect failed': {
      const sent = issued.filter((v) => v === 'inspect').length;
      if (sent === 0) return { verb: 'inspect' };
      // Ironic too busy to inspect (its database locked under load, or our inspect unanswered and failed with no
      // reason): inspect again, quietly.
      const again = { verb: 'inspect', prepare: () => pause(resendDelayMs(sent)) };
      if (inspectionFailedForIronic(n.last_error, sent, unanswered.includes('inspect'))) return again;
      // Ironic's power sync clears last_error within a sync interval (node_history on): read late, its saturation is in
      // the history. With node_history off the sync keeps last_error, and the saturation was told from it above.
      return !n.last_error && sent <= TRANSIENT_RESENDS ? { failed: 'inspection failed', unlessIronics: again } : { failed: 'inspection failed' };
    }
    case 'enroll':
    case 'available':
      return { verb: 'manage' };
    default:
      return { fail: `cannot inspect a node in Ironic state "${n.provision_state}"` };
  }
};

/** Preparing a node in neither goal state: manageable first out of enroll or a failed inspection, else stuck. */
const managedFirst = (n: IronicNode): Step =>
  n.provision_state === 'enroll' || n.provision_state === 'inspect failed' ? { verb: 'manage' } : { fail: `cannot prepare a node in Ironic state "${n.provision_state}"` };

export function createRegisterActivities(deps: RegisterDeps) {
  const { ironic, secrets, inspection } = deps;
  const { drive, findNode } = deps.driver;
  const { namingRamdisk } = createRamdiskCheck(ironic);
  /**
   * A hardware type's enabled interfaces, read once a minute per worker rather than once per registration: they
   * change only with Ironic's configuration (a restart). A read that failed is not kept.
   */
  const drivers = new Map<string, { at: number; enabled: Promise<Record<string, unknown>> }>();
  function enabledInterfaces(driver: string): Promise<Record<string, unknown>> {
    const cached = drivers.get(driver);
    if (cached && Date.now() - cached.at < DRIVER_CACHE_MS) return cached.enabled;
    const enabled = ironic.getDriver(driver);
    drivers.set(driver, { at: Date.now(), enabled });
    enabled.catch(() => drivers.get(driver)?.enabled === enabled && drivers.delete(driver));
    return enabled;
  }

  async function credentials(ref: HostRef, spec: HostSpec) {
    const name = bmcOf(spec).credentialsName;
    return readCredentials(deps.bmcSecrets ?? secrets, ref.namespace, name);
  }

  /**
   * The boot MAC's port on the host's node. `created`: the node was created by this call, so it has no port yet and
   * none is listed. A new host's MAC is not looked up before its node is created: Ironic's 409 for the port says the
   * MAC is taken, and only then is its holder read (findNode, by MAC). A holder that is not the host's fails the
   * registration as a lookup first would have, and a node this call created for nothing is removed again (it was
   * only ever in enroll: no hardware was touched). A holder that is the host's own node (its mark, another name) is
   * returned: the host goes on with it, the node in enroll that took its name removed first.
   */
  async function ensurePort(target: NodeTarget, node: IronicNode, mac: string | undefined, created: boolean): Promise<IronicNode | undefined> {
    if (!mac) return undefined;
    if (!created) {
      const ports = await ironic.listPorts(node.uuid);
      if (ports.some((p) => p.address.toLowerCase() === mac)) return undefined;
    }
    try {
      await ironic.createPort(node.uuid, mac);
      return undefined;
    } catch (err) {
      if (!(err instanceof IronicError && err.kind === 'conflict')) throw err;
      let holder: IronicNode | undefined;
      try {
        holder = await findNode(target, ['mac']);
      } catch (failure) {
        if (created) await removeStray(node);
        throw failure;
      }
      if (!holder || holder.uuid === node.uuid) throw err; // our own port raced in, or the node is locked: retry
      // The host's own node holds the MAC: the node that took the host's name goes, if it is a bare new one.
      if (node.provision_state !== 'enroll') {
        throw operationFailed(`boot MAC ${mac} is on Ironic node ${holder.name ?? holder.uuid}, also marked for this host, while node ${node.name ?? node.uuid} (${node.provision_state}) has the host's name: remove one of them`);
      }
      await removeStray(node);
      return holder;
    }
  }

  /** A node in enroll this registration made (or an earlier attempt of it), found holding nothing: deleted. */
  async function removeStray(node: IronicNode): Promise<void> {
    try {
      await ironic.deleteNode(node.uuid);
    } catch (err) {
      if (!(err instanceof IronicError && err.kind === 'not-found')) throw err;
    }
  }

  /**
   * The node's `network_data` from `preprovisioningNetworkDataName`, as Metal3 sets it (BMO register.go, no
   * PreprovisioningImage builder): Ironic hands it to the agent ramdisk (static IPs for inspection and
   * deploy). Its `networkData` key (else `value`), JSON or YAML; undefined when the spec names none.
   */
  async function preprovisioningNetworkData(ref: HostRef, spec: HostSpec): Promise<Record<string, unknown> | undefined> {
    const name = spec.preprovisioningNetworkDataName;
    if (!name) return undefined;
    const text = await readSecretKey(secrets, ref.namespace, name, ['networkData', 'value']);
    const parsed = parseConfigMapping(text);
    // The reason never quotes the data.
    if ('reason' in parsed) throw operationFailed(`spec.preprovisioningNetworkDataName: Secret ${ref.namespace}/${name} must hold a JSON object or YAML mapping: it ${parsed.reason}`);
    return parsed.value;
  }

  /**
   * Creates or updates the host's node so it matches the spec; returns its UUID. With `manage`, also takes it
   * out of enroll as manageNode does, starting from the node the create or the PATCH answered with: one activity
   * and one read fewer per registration (the host workflow asks for it under patch lifecycle-events).
   */
  async function ensureNode(input: { ref: HostRef; spec: HostSpec; nodeId?: string; manage?: true }): Promise<RegisteredNode> {
    const { ref, spec } = input;
    const bmc = bmcOf(spec);
    const access = parseBmcAddress(bmc.address);
    if (!access.ok) throw operationFailed(access.errors.map((e) => `${e.field}: ${e.reason}`).join('; '));
    const creds = await credentials(ref, spec);
    const driverInfo = ironicDriverInfo(access.value, creds, {
      disableCertificateVerification: bmc.disableCertificateVerification,
      redfishVerifyCa: deps.redfishVerifyCa,
    });
    const enabled = await enabledInterfaces(access.value.driver).catch((err: unknown) => {
      if (err instanceof IronicError && err.kind === 'not-found') {
        throw operationFailed(`this Ironic does not enable hardware type ${access.value.driver} (BMC type ${access.value.type})`);
      }
      throw err;
    });
    const interfaces = nodeInterfaces(access.value, enabled, inspection);
    const wanted = wantedProperties(spec);
    const { capabilities, rootDevice, automatedClean } = wanted;
    const name = ironicNodeName(ref);
    const networkData = await preprovisioningNetworkData(ref, spec);

    // As BMO: the node's own disable_power_off where Ironic has it (an older Ironic relies on the workflow's rule),
    // written with the node's other fields (one request, at the microversion that has the field).
    const powerOff = (await ironic.supports(DISABLE_POWER_OFF_MICROVERSION)) ? spec.disablePowerOff === true : undefined;
    const powerOffVersion = powerOff === undefined ? undefined : DISABLE_POWER_OFF_MICROVERSION;
    let created = false;
    const target = { ref, nodeId: input.nodeId, bootMACAddress: spec.bootMACAddress };
    // A new host (no stored node) is not looked up at all: its node is created, a name already taken (Ironic's 409)
    // is then looked up (an earlier attempt's node whose create Ironic accepted before that attempt died, or a node of
    // the host's name registered otherwise, Metal3's), and a boot MAC already taken is told by its port's 409
    // (ensurePort). A host with a stored node looks it up, then its boot MAC's (the node gone from Ironic).
    let node = input.nodeId ? await findNode(target, ['id', 'mac']) : undefined;
    if (!node) {
      try {
        node = await ironic.createNode({
          name,
          driver: access.value.driver,
          driver_info: driverInfo,
          ...interfaces,
          properties: { capabilities, ...(rootDevice ? { root_device: rootDevice } : {}), ...(spec.architecture ? { cpu_arch: spec.architecture } : {}) },
          automated_clean: automatedClean,
          ...(networkData ? { network_data: networkData } : {}),
          extra: { [OWNER_KEY]: ownerMark(ref) },
          ...(powerOff === undefined ? {} : { disable_power_off: powerOff }),
        }, powerOffVersion);
        created = true;
      } catch (err) {
        if (!(err instanceof IronicError && err.kind === 'conflict')) throw err;
        // Judged as any node found by name: the host's unless marked for another; brought in line below.
        node = await findNode(target, ['name']);
        if (!node) throw err;
      }
    }
    /** A node found (not created by this call) brought in line with the spec, in one PATCH. */
    const lineUp = async (node: IronicNode): Promise<IronicNode> => {
      const ops: JsonPatchOp[] = [{ op: 'add', path: '/driver_info', value: driverInfo }];
      if (node.name !== name) ops.push({ op: 'add', path: '/name', value: name });
      // A node found by id or name that lacks the mark (Metal3's, or registered before marks were
      // checked) is the host's from now on: only marked nodes are ever powered off or deleted.
      if (node.extra?.[OWNER_KEY] !== ownerMark(ref)) ops.push({ op: 'add', path: `/extra/${OWNER_KEY}`, value: ownerMark(ref) });
      // Ironic refuses a driver or interface change outside these states (409, not transient): a node adopted
      // active (Metal3's, with its own interfaces, e.g. inspect_interface agent) keeps them until it is registered
      // again in a state that allows it; they serve the node as they are.
      const locked = !INTERFACES_UPDATABLE.includes(node.provision_state) && !node.maintenance;
      if (!locked && node.driver !== access.value.driver) ops.push({ op: 'add', path: '/driver', value: access.value.driver });
      const current = node as unknown as Record<string, unknown>;
      for (const [key, value] of locked ? [] : Object.entries(interfaces)) {
        // live-iso (ramdisk) and custom deploys choose their deploy interface; their deploy or the next one resets it.
        if (key === 'deploy_interface' && deployChosenInterface(current[key])) continue;
        if (current[key] !== value) ops.push({ op: 'add', path: `/${key}`, value });
      }
      // As Metal3: set when given (a removed name leaves what the node has).
      if (networkData && JSON.stringify(node.network_data) !== JSON.stringify(networkData)) {
        ops.push({ op: 'add', path: '/network_data', value: networkData });
      }
      ops.push(...propertyOps(node, wanted));
      if (powerOff !== undefined) ops.push({ op: 'add', path: '/disable_power_off', value: powerOff });
      return ironic.patchNode(node.uuid, ops, powerOffVersion);
    };
    if (!created) node = await lineUp(node);
    const holder = await ensurePort(target, node, spec.bootMACAddress, created);
    if (holder) {
      node = await lineUp(holder);
      await ensurePort(target, node, spec.bootMACAddress, false);
    }
    if (!input.manage) return registeredSummary(node);
    const answered = node;
    return registeredSummary(await drive(node.uuid, managePlan, { firstRead: () => Promise.resolve(answered) }));
  }

  const managePlan: Plan = (n, issued) => {
    if (n.provision_state !== 'enroll') return { done: true };
    if (issued.includes('manage')) return { failed: 'registration failed' };
    return { verb: 'manage' };
  };

  async function manageNode(input: NodeTarget & { nodeId: string }): Promise<RegisteredNode> {
    return registeredSummary(await drive(input.nodeId, managePlan));
  }

  async function inspectNode(input: NodeTarget & InStepSettings & { nodeId: string }): Promise<{ hardware: HardwareDetails }> {
    const node = await drive(input.nodeId, inspectPlan, { firstRead: deps.firstRead(input.ref, input.settings) });
    const inventory = await ironic.getInventory(node.uuid);
    if (inventory) return { hardware: hardwareFromInventory(inventory) };
    // The properties inspection wrote: the node as drive ended on it may be the read from before the inspection.
    return { hardware: hardwareFromProperties((await deps.driver.mustGetNode(node.uuid)).properties) };
  }

  /**
   * `preparing` as BMO's Prepare: the node is left `manageable` (or
   * `available`, cleaned by a deprovision) and automated cleaning waits for provisioning (deployNode),
   * so a host needs no agent ramdisk to become available. Manual cleaning is the clean operation's.
   */
  async function prepareNode(input: NodeTarget & InStepSettings & { nodeId: string; powerOn?: true }): Promise<NodeSummary> {
    const node = await drive(input.nodeId, (n) => {
      if (n.provision_state === 'manageable' || n.provision_state === 'available') return { done: true };
      // As BMO's Prepare: a failed clean (an earlier provide's) is made manageable again.
      return n.provision_state === 'clean failed' ? { verb: 'manage' } : managedFirst(n);
    }, { firstRead: deps.firstRead(input.ref, input.settings) });
    if (!input.powerOn || node.power_state === 'power on' || !deps.powerFrom) return summary(node);
    // The power-on the available host would ask for next (the host workflow asks only then), from the node just read.
    // Not this step's failure if it fails: the host's power operation follows and records it as before.
    try {
      return await deps.powerFrom(node, true, 'powerIssued');
    } catch (err) {
      if (err instanceof CancelledFailure || activityContext()?.cancellationSignal.aborted) throw err;
      if (activityContext()) log.warn(`host ${input.ref.namespace}/${input.ref.name}: power on after prepare failed; the host's power operation follows`, { error: err instanceof Error ? err.message : String(err) });
      return summary(node);
    }
  }

  /** `preparing` before patch bmo-cleaning-placement: Ironic's provide (automated cleaning) made the node available. */
  async function provideNode(input: NodeTarget & { nodeId: string; automatedCleaning: boolean }): Promise<NodeSummary> {
    const node = await namingRamdisk(input.nodeId, () => drive(input.nodeId, (n, issued) => {
      switch (n.provision_state) {
        case 'available':
          return { done: true };
        case 'manageable':
          return { verb: 'provide', patch: () => automatedCleanOps(n, input.automatedCleaning) };
        case 'clean failed':
          return issued.includes('provide') ? { failed: 'cleaning failed' } : { verb: 'manage' };
        default:
          return managedFirst(n);
      }
    }));
    return summary(node);
  }

  return { ensureNode, manageNode, inspectNode, prepareNode, provideNode };
}
