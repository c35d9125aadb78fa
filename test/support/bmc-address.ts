/** Shared by the BMC address unit tests: parse-or-throw helpers and the Redfish family. */
import { expect } from 'vitest';
import { parseBmcAddress, type BmcAccess, type BmcType } from '../../model/bmc';
import type { FieldError, Result } from '../../model/field-error';

export function mustParse(address: string): BmcAccess {
  const r = parseBmcAddress(address);
  if (!r.ok) throw new Error(`expected ${address} to parse, got ${JSON.stringify(r.errors)}`);
  return r.value;
}

export function mustFail<T>(r: Result<T>): FieldError[] {
  if (r.ok) throw new Error(`expected failure, got ${JSON.stringify(r.value)}`);
  return r.errors;
}

export function reasonOf(address: string): string {
  const errors = mustFail(parseBmcAddress(address));
  expect(errors).toHaveLength(1);
  expect(errors[0]!.field).toBe('spec.bmc.address');
  return errors[0]!.reason;
}

export const SYS = '/redfish/v1/Systems/1';
export const REDFISH_TYPES: BmcType[] = [
  'redfish',
  'redfish-virtualmedia',
  'redfish-uefihttp',
  'idrac-redfish',
  'idrac-virtualmedia',
  'ilo5-redfish',
  'ilo5-virtualmedia',
];

