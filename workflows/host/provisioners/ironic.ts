/**
 * The Ironic provisioner's operations (provisioner.ts), run inside the host
 * workflow (operation.ts), each labelled so the Temporal UI shows it as its own
 * step. They sequence activities and make no decisions about the host; the host
 * workflow decides what runs next.
 */
import { patched, proxyActivities } from '@temporalio/workflow';
import { ACTIVITY_OPTIONS } from '../../common/activity-options';
import { bmcOf, type HostSpec } from '../../../model/host';
import { required } from '../operation-common';
import type { IronicActivities } from '../../../activities/ironic/activities';
import type { BmcActivities } from '../../../activities/bmc/activities';
import { parseBmcAddress } from '../../../model/bmc';
import { customDeployMethod } from '../../../model/custom-deploy';
import { changePower, inspectFromBmc, reboot } from './power';
import type { OperationInput, OperationOutcome } from '../operation-types';
import { abortingOnCancel } from '../operation-cancel';

const quick = proxyActivities<IronicActivities>(ACTIVITY_OPTIONS.ironicCall);
const registering = proxyActivities<IronicActivities>(ACTIVITY_OPTIONS.ironicRegister);
const waiting = proxyActivities<IronicActivities>(ACTIVITY_OPTIONS.ironicWait);
/** Waits the host may cancel (abortingOnCancel): the cancellation is over only once the activity has stopped. */
const interruptible = proxyActivities<IronicActivities>(ACTIVITY_OPTIONS.ironicWaitCancellable);
/** The BMC pre-flight: a BMC error is recorded at once (no quiet retries). */
const bmc = proxyActivities<BmcActivities>(ACTIVITY_OPTIONS.bmcCall);

const cleaning = (spec: HostSpec | undefined): boolean => (spec?.automatedCleaningMode ?? 'metadata') !== 'disabled';

/** The spec for the step's activity to bring the node's settings in line with, when the workflow left that to it. */
const inStep = (input: OperationInput): { settings?: HostSpec } => (input.settingsInStep && input.spec ? { settings: input.spec } : {});

/** A node holding the host's boot MAC that is not the host's was left alone: the host's record and Event say so. */
const untouchedNote = (result: { untouched?: string }): { note?: string } => (result.untouched ? { note: result.untouched } : {});

export async function enrollOperation(input: OperationInput): Promise<OperationOutcome> {
  const spec = required(input.spec, 'a spec');
  // Pre-flight: a wrong password or an unreachable BMC is named here, before Ironic is touched.
  const bmcType = parseBmcAddress(bmcOf(spec).address);
  if (bmcType.ok && bmcType.value.type !== 'fake') {
    await bmc.preflightBmc({ ref: input.ref, spec });
  }
  // One activity that registers and manages (its manage starts from the node registration answered with).
  // patch since v0.2.0
  const node = patched('lifecycle-events')
    ? await waiting.ensureNode({ ref: input.ref, spec, nodeId: input.nodeId, manage: true })
    : await waiting.manageNode({ ref: input.ref, nodeId: (await registering.ensureNode({ ref: input.ref, spec, nodeId: input.nodeId })).nodeId });
  const { nodeId } = node;
  if (input.adopt) {
    const adopted = await waiting.adoptNode({ ref: input.ref, nodeId, image: input.adopt.image });
    return { nodeId, poweredOn: adopted.poweredOn };
  }
  return { nodeId, poweredOn: node.poweredOn };
}

export async function inspectOperation(input: OperationInput): Promise<OperationOutcome> {
  if (input.spec?.inspectionMode === 'fast') return inspectFromBmc({ ref: input.ref, spec: input.spec });
  const nodeId = required(input.nodeId, 'a node');
  const { hardware } = await abortingOnCancel(input, () => interruptible.inspectNode({ ref: input.ref, nodeId, ...inStep(input) }));
  return { hardware };
}

export async function prepareOperation(input: OperationInput): Promise<OperationOutcome> {
  const nodeId = required(input.nodeId, 'a node');
  // As BMO: the node stays manageable while the host is available and automated cleaning runs
  // when provisioning starts (deployNode).
  const node = await abortingOnCancel(input, () => interruptible.prepareNode({ ref: input.ref, nodeId, ...inStep(input), ...(input.powerOnAfterPrepare ? { powerOn: true as const } : {}) }));
  return { poweredOn: node.poweredOn };
}

export async function provisionOperation(input: OperationInput): Promise<OperationOutcome> {
  const spec = required(input.spec, 'a spec');
  const nodeId = required(input.nodeId, 'a node');
  // A custom deploy (Metal3's customDeploy.method) needs no image.
  const method = customDeployMethod(spec);
  const image = input.image ?? (method ? spec.image : required(spec.image, 'an image'));
  const acts = interruptible;
  return abortingOnCancel(input, async () => {
    let node = await acts.deployNode({
      ref: input.ref,
      nodeId,
      ...(image ? { image } : {}),
      ...(method ? { customDeploy: method } : {}),
      userData: spec.userData,
      networkData: spec.networkData,
      metaData: spec.metaData,
      ...(spec.preprovisioningNetworkDataName ? { preprovisioningNetworkDataName: spec.preprovisioningNetworkDataName } : {}),
      ...(input.networkDataFrom ? { networkDataFrom: input.networkDataFrom } : {}),
      ...(input.uid ? { uid: input.uid } : {}),
      automatedCleaning: cleaning(spec),
      ...inStep(input),
    });
    // Drivers differ in the power state a deploy leaves behind; the spec decides.
    if (node.poweredOn !== spec.online) node = await acts.setPower({ ref: input.ref, nodeId, on: spec.online });
    return { poweredOn: node.poweredOn };
  });
}

export async function deprovisionOperation(input: OperationInput): Promise<OperationOutcome> {
  const nodeId = required(input.nodeId, 'a node');
  const node = await waiting.undeployNode({ ref: input.ref, nodeId, automatedCleaning: cleaning(input.spec), ...inStep(input) });
  return { poweredOn: node.poweredOn };
}

/**
 * Both provisioners' power operation: a steady-state order (soft, or through the
 * BMC) goes the order's way; a plain on/off target goes to the provisioner's `setPower`.
 */
export async function powerByOrder(input: OperationInput, setPower: (input: OperationInput) => Promise<OperationOutcome>): Promise<OperationOutcome> {
  // As Metal3: a host whose power must never go off is not powered off before deleting either.
  if (input.powerOn === false && input.spec?.disablePowerOff) return {};
  if (input.power && (input.power.via === 'bmc' || input.power.mode)) return changePower({ ...input, power: input.power });
  return setPower(input);
}

export async function powerOperation(input: OperationInput): Promise<OperationOutcome> {
  return powerByOrder(input, async () => {
    const node = await waiting.setPower({
      ref: input.ref,
      nodeId: input.nodeId,
      bootMACAddress: input.spec?.bootMACAddress,
      on: required(input.powerOn, 'a power target'),
    });
    return { poweredOn: node.poweredOn, ...untouchedNote(node) };
  });
}

/** One-shot reboot (reboot.metal3.io or the API), through Ironic or the BMC. */
export async function rebootOperation(input: OperationInput): Promise<OperationOutcome> {
  return reboot({ ...input, power: required(input.power, 'a power order') });
}

export async function deleteOperation(input: OperationInput): Promise<OperationOutcome> {
  const deleted = await quick.deleteNode({ ref: input.ref, nodeId: input.nodeId, bootMACAddress: input.spec?.bootMACAddress });
  return { nodeId: '', poweredOn: false, ...untouchedNote(deleted) };
}

/** Leaves Ironic without deprovisioning or powering off: the node record is deleted, the machine keeps running. */
export async function detachOperation(input: OperationInput): Promise<OperationOutcome> {
  const detached = await quick.detachNode({ ref: input.ref, nodeId: input.nodeId, bootMACAddress: input.spec?.bootMACAddress });
  return { nodeId: '', ...untouchedNote(detached) };
}
