// The workflow bundle's entry point: every workflow type the worker registers.
export { hostWorkflow } from './host/host';
export { fleetWorkflow } from './fleet/fleet';
export { remediateWorkflow } from './remediation/remediate';
export { provisioningLimiterWorkflow } from './limiter/provisioning-limiter';
export { pivotWorkflow } from './pivot/pivot';
export { planeCheckWorkflow } from './pivot/plane-check';
export { ipPoolWorkflow } from './ipam/ippool';
export { firmwareInventoryWorkflow } from './firmware/firmware-inventory';
export { powerSentinelWorkflow } from './power/power-sentinel';
export { siteNodeHealthWorkflow } from './site/node-health';
// Each type's Worker Versioning behavior (PINNED or AUTO_UPGRADE), set on the functions above.
import './common/versioning';
