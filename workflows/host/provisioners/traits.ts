/**
 * What the host workflow's rules may know about a host's provisioner without
 * running it: the one place `spec.provisioner` is read. The decider and the
 * rules import this (no activity proxies); provisioner.ts adds the
 * operations to the same choice.
 */
import type { HostSpec } from '../../../model/host';

export interface ProvisionerTraits {
  readonly name: NonNullable<HostSpec['provisioner']>;
  /**
   * The host is a node in Ironic: Ironic holds its settings (automated_clean, disable_power_off, boot mode,
   * credentials) and its power. Without one, metalflow drives the BMC itself and enrolling only reads it, so a
   * host that never enrolled leaves nothing behind to undo.
   */
  readonly ironicNode: boolean;
}

export const IRONIC_TRAITS: ProvisionerTraits = { name: 'ironic', ironicNode: true };
export const DIRECT_TRAITS: ProvisionerTraits = { name: 'direct', ironicNode: false };

/**
 * The provisioner `spec` names. The host workflow keeps the one it chose
 * (context.ts): spec.provisioner may change only until the host has a
 * provisioning state (specConflict), so from then on the choice is fixed.
 */
export function provisionerTraits(spec: HostSpec | undefined): ProvisionerTraits {
  return spec?.provisioner === 'direct' ? DIRECT_TRAITS : IRONIC_TRAITS;
}
