// The workflow bundle's entry point: every workflow type the worker registers.
export { hostWorkflow } from './host';
export { fleetWorkflow } from './fleet';
export { remediateWorkflow } from './remediate';
export { provisioningLimiterWorkflow } from './provisioning-limiter';
export { pivotWorkflow } from './pivot';
export { planeCheckWorkflow } from './plane-check';
export { ipPoolWorkflow } from './ippool';
export { firmwareInventoryWorkflow } from './firmware-inventory';
export { powerSentinelWorkflow } from './power-sentinel';
// Each type's Worker Versioning behavior (PINNED or AUTO_UPGRADE), set on the functions above.
import './versioning';
