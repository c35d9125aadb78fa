/**
 * BareMetalHost conditions as BMO's computeConditions sets them
 * (internal/controller/metal3.io/baremetalhost_controller.go), state by state.
 */
import { describe, expect, it } from 'vitest';
import { computeConditions, type HostCondition } from '../../types/conditions';

const T0 = '2026-11-23T10:00:00Z';
const T1 = '2026-11-23T11:00:00Z';
const at = (state: string, operationalStatus = 'OK', previous: unknown = undefined, now = T0) =>
  computeConditions({ provisioning: { state, ID: '' }, operationalStatus } as never, previous, { now, generation: 3 });
const table = (cs: HostCondition[]) => Object.fromEntries(cs.map((c) => [c.type, `${c.status}/${c.reason}`]));

describe('computeConditions', () => {
  it.each([
    ['', 'OK', { Manageable: 'False/NotManaged', AvailableForProvisioning: 'False/NotAvailable', Provisioned: 'False/NotProvisioned', Ready: 'False/NotProvisioned', Progressing: 'False/NotProgressing' }],
    ['registering', 'OK', { Manageable: 'False/Registering', Progressing: 'True/Registering', Ready: 'False/NotProvisioned' }],
    ['registering', 'error', { Manageable: 'False/RegistrationFailed', Ready: 'False/Error' }],
    ['inspecting', 'OK', { Manageable: 'True/Manageable', Progressing: 'True/Inspecting', AvailableForProvisioning: 'False/NotAvailable' }],
    ['preparing', 'OK', { Progressing: 'True/Preparing' }],
    ['available', 'OK', { Manageable: 'True/Manageable', AvailableForProvisioning: 'True/Available', Ready: 'False/NotProvisioned', Progressing: 'False/NotProgressing' }],
    ['provisioning', 'error', { Progressing: 'True/Provisioning', Ready: 'False/Error' }],
    ['provisioned', 'OK', { Provisioned: 'True/Provisioned', Ready: 'True/Provisioned', AvailableForProvisioning: 'False/NotAvailable', Progressing: 'False/NotProgressing' }],
    ['externally provisioned', 'OK', { Ready: 'True/Provisioned' }],
    ['provisioned', 'detached', { Ready: 'False/Detached', Progressing: 'False/Detached', Provisioned: 'True/Provisioned' }],
    ['deprovisioning', 'OK', { Progressing: 'True/Deprovisioning' }],
    ['powering off before delete', 'OK', { Progressing: 'True/PoweringOffBeforeDelete' }],
    ['deleting', 'OK', { Progressing: 'True/Deleting' }],
  ])('%s / %s', (state, op, expected) => {
    const got = table(at(state, op));
    expect(got).toMatchObject(expected);
    // No provider health reading: Unknown, as BMO without one.
    expect(got.Healthy).toBe('Unknown/Unknown');
  });

  it('keeps lastTransitionTime while a status holds and moves it when the status changes', () => {
    const available = at('available');
    const again = at('available', 'OK', available, T1);
    expect(again).toEqual(available.map((c) => ({ ...c })));
    const provisioned = Object.fromEntries(at('provisioned', 'OK', available, T1).map((c) => [c.type, c]));
    expect(provisioned.Manageable!.lastTransitionTime).toBe(T0); // True before and after
    expect(provisioned.Ready!.lastTransitionTime).toBe(T1); // False → True
    expect(provisioned.AvailableForProvisioning!.lastTransitionTime).toBe(T1);
    expect(provisioned.Ready!.observedGeneration).toBe(3);
  });

  it("keeps another controller's conditions and ignores what is not a condition", () => {
    const foreign = { type: 'capm3.metal3.io/Custom', status: 'True', reason: 'X', message: 'kept', lastTransitionTime: T0 };
    const cs = at('available', 'OK', [foreign, 'junk', { no: 'type' }], T1);
    expect(cs).toContainEqual(foreign);
    expect(cs).toHaveLength(7);
  });
});
