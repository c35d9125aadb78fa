/**
 * The seam between the host workflow and whoever carries out its operations:
 * Ironic (`spec.provisioner: ironic`, the default) or metalflow itself over
 * the BMC (`spec.provisioner: direct`). The host workflow decides which
 * operation runs next and hands it to the host's provisioner; what a
 * provisioner cannot do it says here (a refusal message), so no caller asks
 * which provisioner it has.
 */
import { ApplicationFailure } from '@temporalio/workflow';
import { parseBmcAddress } from '../../../model/bmc';
import type { CleanStepName } from '../../../model/clean';
import { DIRECT_CLEAN_STEPS } from '../../../model/clean';
import { FAILURE } from '../../../model/failures';
import type { HostSpec } from '../../../model/host';
import type { OperationKind } from '../../../contracts/host';
import type { OperationInput, OperationOutcome } from '../operation-types';
import {
  deleteOperation,
  deprovisionOperation,
  detachOperation,
  enrollOperation,
  inspectOperation,
  powerByOrder,
  powerOperation,
  prepareOperation,
  provisionOperation,
  rebootOperation,
} from './ironic';
import { cleanOperation, serviceOperation } from './ironic-clean';
import { directDelete, directDeprovision, directEnroll, directInspect, directPower, directPrepare, directProvision } from './direct';
import { directClean } from './direct-clean';
import { DIRECT_TRAITS, IRONIC_TRAITS, provisionerTraits, type ProvisionerTraits } from './traits';

/** `progress`: an operation's named steps as they start (only clean and service have them). */
export type OperationFn = (input: OperationInput, progress?: (step: string) => void) => Promise<OperationOutcome>;

/**
 * One function per operation the host runs. `enroll` registers the host, or
 * adopts a provisioned one when `input.adopt` is set; firmware and BIOS
 * changes run as `clean` steps (an available host) or `service` steps (a
 * provisioned one, as its HostUpdatePolicy allows). A move between sites is
 * not a provisioner's: the host workflow runs it over both sites (site-move.ts).
 */
export type ProvisionerOperations = Readonly<Record<Exclude<OperationKind, 'move'>, OperationFn>>;

export interface Provisioner extends ProvisionerTraits {
  readonly operations: ProvisionerOperations;
  /**
   * Whether `op` counts against the provisioning limit: BMO gates inspecting,
   * provisioning and deprovisioning, except where no network boot is involved.
   */
  needsPermit(op: OperationKind, spec: HostSpec | undefined): boolean;
  /** Why these manual clean steps cannot run here, or undefined when they can. */
  refuseCleanSteps(steps: readonly CleanStepName[]): string | undefined;
  /** Why a provisioned host cannot be serviced (firmware or BIOS changes applied in place), or undefined when it can. */
  readonly servicingRefused?: string;
}

export const ironicProvisioner: Provisioner = {
  ...IRONIC_TRAITS,
  operations: {
    enroll: enrollOperation,
    inspect: inspectOperation,
    prepare: prepareOperation,
    provision: provisionOperation,
    deprovision: deprovisionOperation,
    power: powerOperation,
    reboot: rebootOperation,
    delete: deleteOperation,
    detach: detachOperation,
    clean: cleanOperation,
    service: serviceOperation,
  },
  needsPermit(op, spec) {
    if (op !== 'inspect' && op !== 'provision' && op !== 'deprovision') return false;
    // Inspection read from the BMC and a virtual-media BMC boot nothing from the network (BMO exempts virtual media).
    if (op === 'inspect' && spec?.inspectionMode === 'fast') return false;
    const bmc = spec?.bmc ? parseBmcAddress(spec.bmc.address) : undefined;
    return !(bmc?.ok && bmc.value.type.endsWith('-virtualmedia'));
  },
  refuseCleanSteps: () => undefined,
};

const DIRECT_NOT_SERVICED =
  'spec.provisioner direct: a provisioned direct host is not serviced (Ironic servicing); deprovision it and use POST …/clean';

export const directProvisioner: Provisioner = {
  ...DIRECT_TRAITS,
  operations: {
    enroll: directEnroll,
    inspect: directInspect,
    prepare: directPrepare,
    provision: directProvision,
    deprovision: directDeprovision,
    power: (input) => powerByOrder(input, directPower),
    reboot: rebootOperation,
    delete: directDelete,
    // No node to remove: detaching must not ask Ironic anything (there may be no Ironic at all).
    detach: async () => ({ nodeId: '' }),
    clean: directClean,
    service: async () => {
      throw ApplicationFailure.create({ type: FAILURE.operationFailed, nonRetryable: true, message: DIRECT_NOT_SERVICED });
    },
  },
  // Virtual media and BMC calls only: nothing boots from the network.
  needsPermit: () => false,
  refuseCleanSteps(steps) {
    const needIronic = steps.filter((step) => !DIRECT_CLEAN_STEPS.includes(step));
    if (needIronic.length === 0) return undefined;
    return `${needIronic.join(', ')} need${needIronic.length === 1 ? 's' : ''} Ironic's agent: spec.provisioner direct runs only the ${DIRECT_CLEAN_STEPS.join(' and ')} steps (over Redfish)`;
  },
  servicingRefused: DIRECT_NOT_SERVICED,
};

/** The provisioner `spec` names (traits.ts chooses). */
export function provisionerFor(spec: HostSpec | undefined): Provisioner {
  return provisionerTraits(spec).ironicNode ? ironicProvisioner : directProvisioner;
}
