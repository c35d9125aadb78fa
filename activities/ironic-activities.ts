/**
 * Activities that drive Ironic. Each one is level-triggered: it re-reads the
 * node, works out the next request from whatever state Ironic reports, and
 * loops until the goal state. A retry after a crash therefore continues where
 * the last attempt left off instead of repeating it: the verbs already sent
 * are carried in heartbeat details, so a failure Ironic reports for them is
 * reported, not re-tried behind the workflow's back.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { parseBmcAddress } from '../types/bmc';
import { ironicDriverInfo } from '../clients/ironic/driver-info';
import { FAILURE } from '../types/failures';
import { bmcOf, type HardwareDetails, type HostRef, type HostSpec, type Image, type SecretReference } from '../types/host';
import { ironicNodeName } from '../types/host-ref';
import { activityContext, heartbeat, keepAlive, poller, type PollOptions, DEFAULT_POLL } from './activity-context';
import { markerKey, ownMarker, provisionMoment, writeMarker } from './sent-marker';
import { IronicClient, IronicError, type JsonPatchOp } from '../clients/ironic/client';
import { hardwareFromInventory, hardwareFromProperties } from '../clients/ironic/hardware';
import { bootCapabilities, ironicRootDeviceHints, nodeInterfaces, type InspectionPreference } from '../clients/ironic/node-spec';
import { DELETABLE_STATES, TRANSITIONAL_STATES, type IronicNode } from '../clients/ironic/types';
import { DEFAULT_WATCH, NodeWatcher, type WatchOptions } from '../clients/ironic/node-watcher';
import { readSecretKey, type SecretReader } from '../clients/secrets/secret-store';

export interface IronicActivityDeps {
  ironic: IronicClient;
  secrets: SecretReader;
  /**
   * `driver_info.redfish_verify_ca` of https Redfish nodes: a CA bundle path on
   * the Ironic conductor (METALFLOW_IRONIC_REDFISH_VERIFY_CA); unset leaves
   * Ironic's default (`[redfish] verify_ca`, else the system's CAs).
   */
  redfishVerifyCa?: string;
  /** How to inspect hosts whose BMC can be inspected out of band (no agent ramdisk needed). */
  inspection?: InspectionPreference;
  poll?: PollOptions;
  /** Shared waiting on node state changes; one per worker. */
  watcher?: NodeWatcher;
  watch?: WatchOptions;
}

/** Heartbeat at least this often while a node is unchanged (the SDK throttles what it sends). */
const WAIT_SLICE_MS = 5000;
/** Re-read the whole node at least this often even when the watcher saw no change. */
const REREAD_MS = 60_000;

export interface NodeTarget {
  ref: HostRef;
  nodeId?: string;
  bootMACAddress?: string;
}

export interface NodeSummary {
  nodeId: string;
  provisionState: string;
  poweredOn: boolean;
}

const summary = (node: IronicNode): NodeSummary => ({
  nodeId: node.uuid,
  provisionState: node.provision_state,
  poweredOn: node.power_state === 'power on',
});

const operationFailed = (message: string): ApplicationFailure =>
  ApplicationFailure.nonRetryable(message, FAILURE.operationFailed);

/** Ironic's errors as failures the workflow can branch on; secrets never reach the message. */
function translate(err: unknown): never {
  if (err instanceof IronicError) {
    switch (err.kind) {
      case 'too-old':
        throw ApplicationFailure.nonRetryable(err.message, FAILURE.ironicTooOld);
      case 'rejected':
        throw ApplicationFailure.nonRetryable(err.message, FAILURE.ironicRejected);
      default:
        throw ApplicationFailure.retryable(err.message, FAILURE.transient);
    }
  }
  throw err;
}

type Step =
  | { done: true }
  | { wait: string }
  | { fail: string }
  | { verb: string; prepare?: () => Promise<Record<string, unknown> | void> };

type Plan = (node: IronicNode, issued: readonly string[]) => Step;

const lastError = (node: IronicNode): string => node.last_error ?? 'no reason given by Ironic';

export function createIronicActivities(deps: IronicActivityDeps) {
  const { ironic, secrets } = deps;
  const poll = deps.poll ?? DEFAULT_POLL;
  const inspection = deps.inspection ?? 'out-of-band';
  const watcher = deps.watcher ?? new NodeWatcher(ironic, deps.watch ?? DEFAULT_WATCH);

  /** Waits (heartbeating) until the watcher sees `node` change, vanish, or a re-read is due. */
  async function waitForChange(node: IronicNode, details: unknown): Promise<void> {
    const ctx = activityContext();
    const started = Date.now();
    for (;;) {
      heartbeat(details);
      const wait = watcher.wait(node.uuid, node, WAIT_SLICE_MS);
      const outcome = await (ctx ? Promise.race([wait, ctx.cancelled]) : wait);
      if (outcome !== 'timeout' || Date.now() - started >= REREAD_MS) return;
    }
  }

  async function findNode(target: NodeTarget): Promise<IronicNode | undefined> {
    if (target.nodeId) {
      const byId = await ironic.getNode(target.nodeId);
      if (byId) return byId;
    }
    const name = ironicNodeName(target.ref);
    const byName = await ironic.getNode(name);
    if (byName) return byName;
    if (!target.bootMACAddress) return undefined;
    const byMac = await ironic.findNodeByMac(target.bootMACAddress);
    // Adopt a node found by MAC only if no other host owns it.
    const owner = byMac?.extra.metalflow_host;
    const otherName = byMac?.name && byMac.name.includes('~') && byMac.name !== name;
    if (byMac && ((owner !== undefined && owner !== `${target.ref.namespace}/${target.ref.name}`) || otherName)) {
      throw operationFailed(`boot MAC ${target.bootMACAddress} is already registered to Ironic node ${byMac.name ?? byMac.uuid}`);
    }
    return byMac;
  }

  async function mustGetNode(nodeId: string): Promise<IronicNode> {
    const node = await ironic.getNode(nodeId);
    if (!node) throw operationFailed(`Ironic node ${nodeId} no longer exists; the host must register again`);
    return node;
  }

  /**
   * Walks a node to a goal: each turn re-reads it and asks the plan for one
   * step. Verbs sent are remembered in heartbeat details across retries.
   */
  async function drive(nodeId: string, plan: Plan): Promise<IronicNode> {
    const ctx = activityContext();
    const previous = ctx?.info.heartbeatDetails as { issued?: string[] } | undefined;
    const issued = [...(previous?.issued ?? [])];
    const polling = poller(poll);
    const key = markerKey();
    let first = true;
    for (;;) {
      const node = await mustGetNode(nodeId);
      if (first) {
        first = false;
        // A verb an earlier attempt sent, whose record died with its worker: the node moved since.
        const marked = ownMarker(node, key);
        if (marked && !issued.includes(marked.verb) && marked.before !== provisionMoment(node)) issued.push(marked.verb);
      }
      const step = TRANSITIONAL_STATES.has(node.provision_state) ? { wait: node.provision_state } : plan(node, issued);
      if ('done' in step) return node;
      if ('fail' in step) throw operationFailed(step.fail);
      if ('verb' in step) {
        if (node.maintenance) {
          throw operationFailed(`Ironic node ${nodeId} is in maintenance: ${node.last_error ?? 'no reason'}`);
        }
        try {
          const extra = (await step.prepare?.()) ?? {};
          if (key) await writeMarker(ironic, nodeId, { key, verb: step.verb, before: provisionMoment(node) });
          await ironic.setProvisionState(nodeId, step.verb, extra);
          issued.push(step.verb);
          heartbeat({ issued });
          polling.reset();
          continue;
        } catch (err) {
          // 409: the node is locked or moved on since we read it; re-read and decide again.
          // 400 for a verb: Ironic may have finished what an earlier attempt asked (the state
          // moved since our read); re-plan from a fresh read, and fail only if nothing moved.
          const rejected = err instanceof IronicError && err.kind === 'rejected';
          if (rejected) {
            const again = await mustGetNode(nodeId);
            if (again.provision_state === node.provision_state && again.target_provision_state === node.target_provision_state) throw err;
            continue;
          }
          if (!(err instanceof IronicError && err.kind === 'conflict')) throw err;
        }
        // Locked by Ironic: the state may not change, so poll instead of waiting for a change.
        await polling.wait({ issued });
        continue;
      }
      await waitForChange(node, { issued });
    }
  }

  const wrap =
    <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      const stop = keepAlive();
      try {
        return await fn(...args);
      } catch (err) {
        return translate(err);
      } finally {
        stop();
      }
    };

  async function credentials(ref: HostRef, spec: HostSpec) {
    const name = bmcOf(spec).credentialsName;
    const username = await readSecretKey(secrets, ref.namespace, name, ['username']);
    const password = await readSecretKey(secrets, ref.namespace, name, ['password']);
    return { username, password };
  }

  async function ensurePort(node: IronicNode, mac: string | undefined): Promise<void> {
    if (!mac) return;
    const ports = await ironic.listPorts(node.uuid);
    if (ports.some((p) => p.address.toLowerCase() === mac)) return;
    try {
      await ironic.createPort(node.uuid, mac);
    } catch (err) {
      if (!(err instanceof IronicError && err.kind === 'conflict')) throw err;
      const owner = await ironic.findNodeByMac(mac);
      if (owner && owner.uuid !== node.uuid) {
        throw operationFailed(`boot MAC ${mac} is already registered to Ironic node ${owner.name ?? owner.uuid}`);
      }
      throw err; // our own port raced in, or the node is locked: retry
    }
  }

  /** Creates or updates the host's node so it matches the spec; returns its UUID. */
  async function ensureNode(input: { ref: HostRef; spec: HostSpec; nodeId?: string }): Promise<NodeSummary> {
    const { ref, spec } = input;
    const bmc = bmcOf(spec);
    const access = parseBmcAddress(bmc.address);
    if (!access.ok) throw operationFailed(access.errors.map((e) => `${e.field}: ${e.reason}`).join('; '));
    const creds = await credentials(ref, spec);
    const driverInfo = ironicDriverInfo(access.value, creds, {
      disableCertificateVerification: bmc.disableCertificateVerification,
      redfishVerifyCa: deps.redfishVerifyCa,
    });
    const enabled = await ironic.getDriver(access.value.driver).catch((err: unknown) => {
      if (err instanceof IronicError && err.kind === 'not-found') {
        throw operationFailed(`this Ironic does not enable hardware type ${access.value.driver} (BMC type ${access.value.type})`);
      }
      throw err;
    });
    const interfaces = nodeInterfaces(access.value, enabled, inspection);
    const rootDevice = ironicRootDeviceHints(spec.rootDeviceHints);
    const capabilities = bootCapabilities(spec);
    const automatedClean = (spec.automatedCleaningMode ?? 'metadata') !== 'disabled';
    const name = ironicNodeName(ref);

    let node = await findNode({ ref, nodeId: input.nodeId, bootMACAddress: spec.bootMACAddress });
    if (!node) {
      try {
        node = await ironic.createNode({
          name,
          driver: access.value.driver,
          driver_info: driverInfo,
          ...interfaces,
          properties: { capabilities, ...(rootDevice ? { root_device: rootDevice } : {}) },
          automated_clean: automatedClean,
          extra: { metalflow_host: `${ref.namespace}/${ref.name}` },
        });
      } catch (err) {
        // Another attempt created it first (duplicate name): adopt that one.
        if (!(err instanceof IronicError && err.kind === 'conflict')) throw err;
        node = await ironic.getNode(name);
        if (!node) throw err;
      }
    } else {
      const ops: JsonPatchOp[] = [{ op: 'add', path: '/driver_info', value: driverInfo }];
      if (node.name !== name) ops.push({ op: 'add', path: '/name', value: name });
      if (node.driver !== access.value.driver) ops.push({ op: 'add', path: '/driver', value: access.value.driver });
      const current = node as unknown as Record<string, unknown>;
      for (const [key, value] of Object.entries(interfaces)) {
        if (current[key] !== value) ops.push({ op: 'add', path: `/${key}`, value });
      }
      if (node.properties.capabilities !== capabilities) {
        ops.push({ op: 'add', path: '/properties/capabilities', value: capabilities });
      }
      if (rootDevice && JSON.stringify(node.properties.root_device) !== JSON.stringify(rootDevice)) {
        ops.push({ op: 'add', path: '/properties/root_device', value: rootDevice });
      } else if (!rootDevice && node.properties.root_device !== undefined) {
        ops.push({ op: 'remove', path: '/properties/root_device' });
      }
      if (node.automated_clean !== automatedClean) {
        ops.push({ op: 'add', path: '/automated_clean', value: automatedClean });
      }
      node = await ironic.patchNode(node.uuid, ops);
    }
    await ensurePort(node, spec.bootMACAddress);
    return summary(node);
  }

  async function manageNode(input: NodeTarget & { nodeId: string }): Promise<NodeSummary> {
    const node = await drive(input.nodeId, (n, issued) => {
      if (n.provision_state !== 'enroll') return { done: true };
      if (issued.includes('manage')) return { fail: `registration failed: ${lastError(n)}` };
      return { verb: 'manage' };
    });
    return summary(node);
  }

  async function inspectNode(input: NodeTarget & { nodeId: string }): Promise<{ hardware: HardwareDetails }> {
    const node = await drive(input.nodeId, (n, issued) => {
      switch (n.provision_state) {
        case 'manageable':
          return issued.includes('inspect') ? { done: true } : { verb: 'inspect' };
        case 'inspect failed':
          return issued.includes('inspect') ? { fail: `inspection failed: ${lastError(n)}` } : { verb: 'inspect' };
        case 'enroll':
        case 'available':
          return { verb: 'manage' };
        default:
          return { fail: `cannot inspect a node in Ironic state "${n.provision_state}"` };
      }
    });
    const inventory = await ironic.getInventory(node.uuid);
    return { hardware: inventory ? hardwareFromInventory(inventory) : hardwareFromProperties(node.properties) };
  }

  /** Metal3's automatedCleaningMode, set on the node just before the verb that may clean. */
  async function setAutomatedClean(nodeId: string, value: boolean): Promise<void> {
    const n = await mustGetNode(nodeId);
    if (n.automated_clean !== value) {
      await ironic.patchNode(nodeId, [{ op: 'add', path: '/automated_clean', value }]);
    }
  }

  async function provideNode(input: NodeTarget & { nodeId: string; automatedCleaning: boolean }): Promise<NodeSummary> {
    const setCleaning = () => setAutomatedClean(input.nodeId, input.automatedCleaning);
    const node = await drive(input.nodeId, (n, issued) => {
      switch (n.provision_state) {
        case 'available':
          return { done: true };
        case 'manageable':
          return { verb: 'provide', prepare: setCleaning };
        case 'clean failed':
          return issued.includes('provide') ? { fail: `cleaning failed: ${lastError(n)}` } : { verb: 'manage' };
        case 'enroll':
        case 'inspect failed':
          return { verb: 'manage' };
        default:
          return { fail: `cannot prepare a node in Ironic state "${n.provision_state}"` };
      }
    });
    return summary(node);
  }

  async function configDrive(ref: HostRef, input: DeployInput): Promise<Record<string, unknown> | undefined> {
    const read = (sref: SecretReference | undefined, keys: string[]) =>
      sref ? readSecretKey(secrets, ref.namespace, sref.name, keys) : Promise.resolve(undefined);
    const userData = await read(input.userData, ['userData', 'value']);
    const networkData = await read(input.networkData, ['networkData', 'value']);
    const metaData = await read(input.metaData, ['metaData', 'value']);
    const parseJson = (what: string, text: string): Record<string, unknown> => {
      try {
        return JSON.parse(text) as Record<string, unknown>;
      } catch {
        throw operationFailed(`the ${what} secret must hold a JSON document`);
      }
    };
    const meta: Record<string, unknown> = {
      uuid: input.nodeId,
      'metal3-namespace': ref.namespace,
      'metal3-name': ref.name,
      'local-hostname': ref.name,
      local_hostname: ref.name,
      name: ref.name,
      ...(metaData ? parseJson('metaData', metaData) : {}),
    };
    return {
      meta_data: meta,
      ...(userData ? { user_data: userData } : {}),
      ...(networkData ? { network_data: parseJson('networkData', networkData) } : {}),
    };
  }

  function instanceInfo(image: Image): JsonPatchOp[] {
    const ops: JsonPatchOp[] = [
      { op: 'add', path: '/instance_info/image_source', value: image.url },
      { op: 'add', path: '/instance_info/image_disk_format', value: image.format ?? 'qcow2' },
    ];
    const checksum = image.checksum;
    if (checksum && /^https?:\/\//i.test(checksum)) {
      ops.push({ op: 'add', path: '/instance_info/image_checksum', value: checksum });
    } else if (checksum) {
      const algo =
        image.checksumType && image.checksumType !== 'auto'
          ? image.checksumType
          : ({ 32: 'md5', 64: 'sha256', 128: 'sha512' } as Record<number, string>)[checksum.length];
      ops.push(
        { op: 'add', path: '/instance_info/image_os_hash_algo', value: algo },
        { op: 'add', path: '/instance_info/image_os_hash_value', value: checksum.toLowerCase() },
      );
    }
    return ops;
  }

  interface DeployInput extends NodeTarget {
    nodeId: string;
    image: Image;
    userData?: SecretReference;
    networkData?: SecretReference;
    metaData?: SecretReference;
  }

  async function deployNode(input: DeployInput): Promise<NodeSummary> {
    const start = async (): Promise<Record<string, unknown>> => {
      await ironic.patchNode(input.nodeId, instanceInfo(input.image));
      const configdrive = await configDrive(input.ref, input);
      return configdrive ? { configdrive } : {};
    };
    const node = await drive(input.nodeId, (n, issued) => {
      switch (n.provision_state) {
        case 'active':
          return { done: true };
        case 'available':
          return { verb: 'active', prepare: start };
        case 'deploy failed':
          return issued.includes('active') ? { fail: `deploy failed: ${lastError(n)}` } : { verb: 'active', prepare: start };
        case 'manageable':
          return { verb: 'provide' };
        case 'clean failed':
          return issued.includes('provide') ? { fail: `cleaning before deploy failed: ${lastError(n)}` } : { verb: 'manage' };
        default:
          return { fail: `cannot provision a node in Ironic state "${n.provision_state}"` };
      }
    });
    return summary(node);
  }

  async function undeployNode(input: NodeTarget & { nodeId: string; automatedCleaning: boolean }): Promise<NodeSummary> {
    const setCleaning = () => setAutomatedClean(input.nodeId, input.automatedCleaning);
    const node = await drive(input.nodeId, (n, issued) => {
      switch (n.provision_state) {
        case 'available':
          return { done: true };
        case 'active':
        case 'deploy failed':
          return { verb: 'deleted', prepare: setCleaning };
        case 'clean failed':
          return issued.includes('deleted') || issued.includes('provide')
            ? { fail: `cleaning after deprovisioning failed: ${lastError(n)}` }
            : { verb: 'manage' };
        case 'manageable':
          return { verb: 'provide' };
        case 'error':
          return issued.includes('deleted') ? { fail: `deprovisioning failed: ${lastError(n)}` } : { verb: 'deleted' };
        default:
          return { fail: `cannot deprovision a node in Ironic state "${n.provision_state}"` };
      }
    });
    return summary(node);
  }

  async function setPower(input: NodeTarget & { on: boolean }): Promise<NodeSummary & { found: boolean }> {
    const found = await findNode(input);
    if (!found) return { nodeId: '', provisionState: '', poweredOn: false, found: false };
    const target = input.on ? 'power on' : 'power off';
    const ctx = activityContext();
    let issued = Boolean((ctx?.info.heartbeatDetails as { issued?: boolean } | undefined)?.issued);
    const polling = poller(poll);
    for (;;) {
      const node = await mustGetNode(found.uuid);
      if (node.power_state === target) return { ...summary(node), found: true };
      if (!node.target_power_state) {
        if (issued && node.last_error) throw operationFailed(`power ${input.on ? 'on' : 'off'} failed: ${node.last_error}`);
        try {
          await ironic.setPowerState(node.uuid, target);
          issued = true;
          heartbeat({ issued });
          continue;
        } catch (err) {
          if (!(err instanceof IronicError && err.kind === 'conflict')) throw err;
        }
        await polling.wait({ issued });
        continue;
      }
      await waitForChange(node, { issued });
    }
  }

  async function deleteNode(input: NodeTarget, reason = 'metalflow: host deleted'): Promise<{ deleted: boolean }> {
    const polling = poller(poll);
    for (;;) {
      const node = await findNode(input);
      if (!node) return { deleted: true };
      if (!TRANSITIONAL_STATES.has(node.provision_state)) {
        try {
          if (!DELETABLE_STATES.has(node.provision_state) && !node.maintenance) {
            // Ironic refuses to delete from failed states unless the node is in maintenance.
            await ironic.setMaintenance(node.uuid, reason);
          }
          await ironic.deleteNode(node.uuid);
          return { deleted: true };
        } catch (err) {
          if (err instanceof IronicError && err.kind === 'not-found') return { deleted: true };
          if (!(err instanceof IronicError && err.kind === 'conflict')) throw err;
        }
      }
      await polling.wait();
    }
  }

  /**
   * Metal3's detach: the node record leaves Ironic as it is. An active node is
   * put in maintenance first (Ironic's way to delete without tearing down), so
   * the machine is neither deprovisioned nor powered off.
   */
  async function detachNode(input: NodeTarget): Promise<{ deleted: boolean }> {
    return deleteNode(input, 'metalflow: host detached');
  }

  /**
   * Makes a registered (manageable) node active without deploying: Ironic's
   * `adopt`, with the image the host was provisioned with in instance_info so
   * Ironic can later tear it down and clean as for any deployed node.
   */
  async function adoptNode(input: NodeTarget & { nodeId: string; image?: Image }): Promise<NodeSummary> {
    const setImage = async (): Promise<void> => {
      if (input.image) await ironic.patchNode(input.nodeId, instanceInfo(input.image));
    };
    const node = await drive(input.nodeId, (n, issued) => {
      switch (n.provision_state) {
        case 'active':
          return { done: true };
        case 'manageable':
          return { verb: 'adopt', prepare: setImage };
        case 'adopt failed':
          return issued.includes('adopt') ? { fail: `adoption failed: ${lastError(n)}` } : { verb: 'adopt', prepare: setImage };
        case 'enroll':
        case 'available':
          return { verb: 'manage' };
        default:
          return { fail: `cannot adopt a node in Ironic state "${n.provision_state}"` };
      }
    });
    return summary(node);
  }

  return {
    detachNode: wrap(detachNode),
    adoptNode: wrap(adoptNode),
    ensureNode: wrap(ensureNode),
    manageNode: wrap(manageNode),
    inspectNode: wrap(inspectNode),
    provideNode: wrap(provideNode),
    deployNode: wrap(deployNode),
    undeployNode: wrap(undeployNode),
    setPower: wrap(setPower),
    deleteNode: wrap(deleteNode),
  };
}

export type IronicActivities = ReturnType<typeof createIronicActivities>;
