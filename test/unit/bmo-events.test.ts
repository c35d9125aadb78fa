/** metalflow's Events as BMO names them in Kubernetes (clients/kubernetes/bmo-events.ts). */
import { describe, expect, it } from 'vitest';
import { asBmoEvents, enteredState } from '../../clients/kubernetes/bmo-events';

const ev = (reason: string, message = 'm') => ({ type: 'Normal' as const, reason, message });
const reasons = (reason: string, message?: string, on = true) => asBmoEvents(ev(reason, message), on).map((e) => e.reason);

describe("BMO's Event reasons", () => {
  it("uses BMO's reason where BMO has the same Event, with metalflow's message", () => {
    expect(reasons('EnrollSucceeded')).toEqual(['Registered', 'BMCAccessValidated']);
    expect(reasons('InspectSucceeded')).toEqual(['InspectionComplete']);
    expect(reasons('ProvisionSucceeded')).toEqual(['ProvisioningComplete']);
    expect(reasons('DeprovisionSucceeded')).toEqual(['DeprovisioningComplete']);
    expect(reasons('PowerSucceeded', 'm', true)).toEqual(['PowerOn']);
    expect(reasons('PowerSucceeded', 'm', false)).toEqual(['PowerOff']);
    expect(asBmoEvents(ev('ProvisionSucceeded', 'provision succeeded; provisioning state provisioned'), true)[0]?.message).toBe('provision succeeded; provisioning state provisioned');
  });

  it("writes a transition BMO has a Started Event for as that Event alone, with StateChanged's message; Discovered for an unmanaged host", () => {
    expect(reasons('StateChanged', 'provisioning state available → provisioning')).toEqual(['ProvisioningStarted']);
    expect(reasons('StateChanged', 'provisioning state registering → inspecting')).toEqual(['InspectionStarted']);
    expect(reasons('StateChanged', 'provisioning state provisioned → deprovisioning')).toEqual(['DeprovisioningStarted']);
    expect(reasons('StateChanged', 'provisioning state none → unmanaged')).toEqual(['Discovered']);
    expect(asBmoEvents(ev('StateChanged', 'provisioning state available → provisioning'), true)).toEqual([ev('ProvisioningStarted', 'provisioning state available → provisioning')]);
    // Transitions BMO has no Event for keep metalflow's.
    expect(reasons('StateChanged', 'provisioning state none → registering')).toEqual(['StateChanged']);
    expect(reasons('StateChanged', 'provisioning state available → powering off before delete')).toEqual(['StateChanged']);
    expect(enteredState('provisioning state powering off before delete → deleting')).toBe('deleting');
    // Registration goes straight on to inspecting: no StateChanged, the Started Event after Registered.
    expect(reasons('EnrollSucceeded', 'enroll succeeded; provisioning state inspecting')).toEqual(['Registered', 'BMCAccessValidated', 'InspectionStarted']);
    expect(enteredState('enroll succeeded; provisioning state externally provisioned (adopted)')).toBe('externally provisioned');
    expect(reasons('PowerSucceeded', 'power succeeded; provisioning state provisioned', false)).toEqual(['PowerOff']);
  });

  it("keeps metalflow's Events where BMO has none, and the error reasons (already BMO's)", () => {
    for (const r of ['PrepareSucceeded', 'RegistrationUpdated', 'RebootSucceeded', 'DetachSucceeded', 'RegistrationError', 'ProvisioningError', 'IronicNodeLost']) {
      expect(reasons(r)).toEqual([r]);
    }
  });
});
