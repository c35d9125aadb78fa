/**
 * The form in which a host spec is kept: what validateHostSpec returns for a
 * valid spec and what the host workflow's applySpec/setImage handler stores.
 * Pure and never rejecting, because the handler runs again on every replay
 * while validation runs only when an update arrives: what the handler stores
 * must not depend on rules that may be tightened later. Changing what this
 * does changes what running host workflows store, so only behind patched().
 */
import { normalizeMac } from './bmc';
import type { HostSpec } from './host';

export function normalizeHostSpec(spec: HostSpec): HostSpec {
  // JSON copy: structuredClone does not exist in the workflow sandbox, and a spec is plain JSON.
  const copy = JSON.parse(JSON.stringify(spec)) as HostSpec;
  // The boot MAC in lower-case colon form, as validation has always stored it (only for a host with a BMC).
  if (copy.bmc && typeof copy.bootMACAddress === 'string' && copy.bootMACAddress !== '') {
    const mac = normalizeMac(copy.bootMACAddress);
    if (mac.ok) copy.bootMACAddress = mac.value;
  }
  return copy;
}
