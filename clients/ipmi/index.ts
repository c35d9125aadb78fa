export * from './client';
export { runIpmitool, ipmitoolArgs, classifyIpmitoolFailure, type IpmitoolResult, type IpmiPrivilege } from './ipmitool';
export { IpmiError } from '../bmc/errors';
