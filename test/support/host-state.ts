/** Builders of host workflow state for the unit tests of the workflow's pure decisions. */
import { registrationFingerprint } from '../../workflows/host/decide';
import { settingsHeld } from '../../workflows/host/rules/servicing';
import { DEFAULT_HOST_OPTIONS, type HostState } from '../../contracts/host';
import { emptyStatus, type HostSpec, type ProvisioningState } from '../../model/host';

export const testSpec = (over: Partial<HostSpec> = {}): HostSpec => ({
  bmc: { address: 'fake://n0', credentialsName: 'n0-bmc-secret' },
  bootMACAddress: '52:54:00:00:00:01',
  online: true,
  ...over,
});

export interface HostStateOptions {
  state?: ProvisioningState;
  spec?: HostSpec;
  poweredOn?: boolean;
  deleteRequested?: boolean;
  ID?: string;
  opSeq?: number;
}

/** Host n0 in namespace ns, registered with the given spec (when there is one). */
export function hostState(over: HostStateOptions = {}): HostState {
  const status = emptyStatus();
  status.provisioning.state = over.state ?? '';
  status.provisioning.ID = over.ID ?? '';
  status.poweredOn = over.poweredOn ?? true;
  const s = over.spec;
  return {
    ref: { namespace: 'ns', name: 'n0' },
    spec: s,
    generation: 1,
    registered: s ? registrationFingerprint(s) : undefined,
    status,
    deleteRequested: over.deleteRequested ?? false,
    opSeq: over.opSeq ?? 0,
    operations: [],
    options: DEFAULT_HOST_OPTIONS,
  };
}

/** The host once told why its settings wait (decide() tells that first, then decides). */
export function told(s: HostState): HostState {
  s.heldTold = settingsHeld(s);
  return s;
}
