/**
 * The provisioner seam: which provisioner a spec names, and what each one
 * refuses (clean steps, servicing, the provisioning limit) before anything runs.
 */
import { describe, expect, it } from 'vitest';
import type { CleanRequest } from '../../model/clean';
import type { HostSpec } from '../../model/host';
import { directProvisioner, ironicProvisioner, provisionerFor } from '../../workflows/host/provisioners/provisioner';
import { checkCleanRequest } from '../../workflows/host/rules/clean-request';
import { checkHoldRequest } from '../../workflows/host/rules/firmware-held';
import { hostState, testSpec } from '../support/host-state';

const REDFISH = 'redfish-virtualmedia+http://127.0.0.1:8000/redfish/v1/Systems/1';
const directSpec = (over: Partial<HostSpec> = {}): HostSpec => testSpec({ bmc: { address: REDFISH, credentialsName: 'c' }, provisioner: 'direct', ...over });
const bios: CleanRequest = { steps: [{ name: 'bios', settings: { BootMode: 'Uefi' } }] };

describe('provisionerFor', () => {
  it('names the direct provisioner for spec.provisioner direct and Ironic otherwise', () => {
    expect(provisionerFor(directSpec())).toBe(directProvisioner);
    expect(provisionerFor(testSpec({ provisioner: 'ironic' }))).toBe(ironicProvisioner);
    expect(provisionerFor(testSpec())).toBe(ironicProvisioner);
    expect(provisionerFor(undefined)).toBe(ironicProvisioner);
  });

  it('gives both provisioners every operation the host runs', () => {
    expect(Object.keys(directProvisioner.operations).sort()).toEqual(Object.keys(ironicProvisioner.operations).sort());
  });
});

describe('what a provisioner refuses', () => {
  it('direct runs only the bios and firmware clean steps and names the others', () => {
    expect(directProvisioner.refuseCleanSteps(['bios', 'firmware'])).toBeUndefined();
    expect(directProvisioner.refuseCleanSteps(['bios', 'erase-full', 'raid'])).toBe(
      "erase-full, raid need Ironic's agent: spec.provisioner direct runs only the bios and firmware steps (over Redfish)",
    );
    expect(ironicProvisioner.refuseCleanSteps(['erase-full', 'raid'])).toBeUndefined();
  });

  it('a direct host asks no permit; an Ironic one for network-booted inspect, provision, deprovision', () => {
    for (const op of ['inspect', 'provision', 'deprovision'] as const) {
      expect(directProvisioner.needsPermit(op, directSpec())).toBe(false);
      expect(ironicProvisioner.needsPermit(op, testSpec({ bmc: { address: 'ipmi://10.0.0.5', credentialsName: 'c' } }))).toBe(true);
      expect(ironicProvisioner.needsPermit(op, testSpec({ bmc: { address: REDFISH, credentialsName: 'c' } }))).toBe(false);
    }
    expect(ironicProvisioner.needsPermit('inspect', testSpec({ inspectionMode: 'fast' }))).toBe(false);
    expect(ironicProvisioner.needsPermit('power', testSpec())).toBe(false);
  });

  it('a provisioned direct host with a HostUpdatePolicy refuses a service request instead of running Ironic servicing', () => {
    const s = { ...hostState({ state: 'provisioned', spec: directSpec() }), updatePolicy: { firmwareSettings: 'onReboot' as const } };
    expect(() => checkCleanRequest(s, bios, undefined, directProvisioner)).toThrow(/provisioned direct host is not serviced/);
    const ironic = { ...hostState({ state: 'provisioned', spec: testSpec(), ID: 'node-1' }), updatePolicy: { firmwareSettings: 'onReboot' as const } };
    expect(() => checkCleanRequest(ironic, bios, undefined, ironicProvisioner)).not.toThrow();
  });

  it('a direct host holds no firmware change for servicing', () => {
    const s = hostState({ state: 'provisioned', spec: directSpec() });
    expect(() => checkHoldRequest(s, bios, directProvisioner)).toThrow(/provisioned direct host is not serviced/);
  });
});
