export * from './client';
export { hardwareFromRedfish, cpuArch, type RedfishInventorySources } from './inventory';
export { RedfishError } from '../bmc/errors';
