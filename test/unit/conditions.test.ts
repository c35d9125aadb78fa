/**
 * BareMetalHost conditions as BMO's computeConditions sets them
 * (internal/controller/metal3.io/baremetalhost_controller.go), state by state.
 */
import { describe, expect, it } from 'vitest';
import { computeConditions, type HostCondition } from '../../model/conditions';

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

  const node = (state: string, reading: { health?: string | null; fault?: string | null } | undefined, previous: unknown = undefined, op = 'OK') =>
    table(computeConditions({ provisioning: { state, ID: 'n' }, operationalStatus: op } as never, previous, { now: T1, node: reading }));

  it("reads Healthy from Ironic's node health as BMO's GetHealth does", () => {
    expect(node('provisioned', { health: 'OK' }).Healthy).toBe('True/Healthy');
    expect(node('available', { health: 'Warning' }).Healthy).toBe('False/Warning');
    expect(node('available', { health: 'Critical' }).Healthy).toBe('False/CriticalError');
    expect(node('available', { health: 'Bogus' }).Healthy).toBe('Unknown/Unknown');
    // No health from the driver: what was there stays (BMO's "" case), Unknown when nothing was.
    const healthy = computeConditions({ provisioning: { state: 'available', ID: 'n' }, operationalStatus: 'OK' } as never, undefined, { now: T0, node: { health: 'OK' } });
    expect(node('available', { health: null }, healthy).Healthy).toBe('True/Healthy');
    expect(node('available', { health: null }).Healthy).toBe('Unknown/Unknown');
  });

  it("sets Manageable False/PowerFailure on Ironic's power failure fault, except where BMO does not check", () => {
    expect(node('provisioned', { fault: 'power failure' }).Manageable).toBe('False/PowerFailure');
    expect(node('available', { fault: 'clean failure' }).Manageable).toBe('True/Manageable');
    expect(node('registering', { fault: 'power failure' }).Manageable).toBe('False/Registering');
    expect(node('provisioned', { fault: 'power failure' }, undefined, 'detached').Manageable).toBe('True/Manageable');
  });

  it("keeps the controller's node reading through the worker's status writes (no reading) until the next reading", () => {
    const read = computeConditions({ provisioning: { state: 'provisioned', ID: 'n' }, operationalStatus: 'OK' } as never, undefined, { now: T0, node: { health: 'Warning', fault: 'power failure' } });
    const written = table(computeConditions({ provisioning: { state: 'provisioned', ID: 'n' }, operationalStatus: 'OK' } as never, read, { now: T1 }));
    expect(written).toMatchObject({ Healthy: 'False/Warning', Manageable: 'False/PowerFailure' });
    // The fault is gone at the next reading.
    expect(node('provisioned', { health: 'OK', fault: null }, read)).toMatchObject({ Healthy: 'True/Healthy', Manageable: 'True/Manageable' });
    // A host that moved to a state BMO does not check loses the override.
    expect(table(computeConditions({ provisioning: { state: 'deleting', ID: 'n' }, operationalStatus: 'OK' } as never, read, { now: T1 })).Manageable).toBe('True/Manageable');
  });

  it('keeps the last known Healthy through a re-registration on a new node (Ironic lost its database) until the new node is read', () => {
    const status = (state: string, ID: string) => ({ provisioning: { state, ID }, operationalStatus: 'OK' }) as never;
    const read = computeConditions(status('available', 'old'), undefined, { now: T0, node: { health: 'OK' } });
    // The worker's writes while it registers again: no reading; the controller's first read of the new node: no health yet.
    const registering = computeConditions(status('registering', 'new'), read, { now: T1 });
    const onNewNode = computeConditions(status('available', 'new'), registering, { now: T1 });
    const newNodeRead = computeConditions(status('available', 'new'), onNewNode, { now: T1, node: { health: null, fault: null } });
    for (const cs of [registering, onNewNode, newNodeRead]) expect(cs.find((c) => c.type === 'Healthy')).toMatchObject({ status: 'True', reason: 'Healthy', lastTransitionTime: T0 });
    // The new node's health, once Ironic's power sync has read it, replaces it.
    expect(table(computeConditions(status('available', 'new'), newNodeRead, { now: T1, node: { health: 'Critical' } })).Healthy).toBe('False/CriticalError');
  });

  it("reports a host whose site cannot be read Unknown/SiteUnreachable, never failed, keeping the last power failure; the next reading replaces it", () => {
    const status = { provisioning: { state: 'provisioned', ID: 'n' }, operationalStatus: 'OK' } as never;
    const why = 'site unreachable: no worker of site "edge-1" took the node health read from task queue site/edge-1 within 60 s';
    const read = computeConditions(status, undefined, { now: T0, node: { health: 'Warning', fault: 'power failure' } });
    const dark = computeConditions(status, read, { now: T1, siteUnread: why });
    expect(dark.find((c) => c.type === 'Healthy')).toMatchObject({ status: 'Unknown', reason: 'SiteUnreachable', message: why, lastTransitionTime: T1 });
    expect(table(dark)).toMatchObject({ Manageable: 'False/PowerFailure', Ready: 'True/Provisioned' });
    // The worker's writes (no reading) keep it, message and all.
    expect(computeConditions(status, dark, { now: T1 }).find((c) => c.type === 'Healthy')).toMatchObject({ reason: 'SiteUnreachable', message: why });
    // Back: a reading with a health replaces it; one with none (fake hardware) is Unknown/Unknown, not the dark site's reason.
    expect(table(computeConditions(status, dark, { now: T1, node: { health: 'OK', fault: null } }))).toMatchObject({ Healthy: 'True/Healthy', Manageable: 'True/Manageable' });
    const none = computeConditions(status, dark, { now: T1, node: { health: null, fault: null } }).find((c) => c.type === 'Healthy');
    expect(none).toMatchObject({ status: 'Unknown', reason: 'Unknown', message: '' });
  });

  it("writes SiteReachable from the workflow's reading of a configured site, and leaves it to writers that have none", () => {
    const status = { provisioning: { state: 'registering', ID: '' }, operationalStatus: 'OK' } as never;
    const reason = 'site unreachable: no worker of site "edge-1" took preflightBmc from task queue site/edge-1; waiting for the site';
    const dark = computeConditions(status, undefined, { now: T0, site: { name: 'edge-1', unreachable: { since: T0, reason } } });
    expect(dark.find((c) => c.type === 'SiteReachable')).toEqual({ type: 'SiteReachable', status: 'False', reason: 'SiteUnreachable', message: reason, lastTransitionTime: T0 });
    // The controller's writes (node health, an invalid spec) pass no site: the condition stays as the worker left it.
    expect(computeConditions(status, dark, { now: T1, node: { health: 'OK' } }).find((c) => c.type === 'SiteReachable')).toMatchObject({ status: 'False', lastTransitionTime: T0 });
    const back = computeConditions(status, dark, { now: T1, site: { name: 'edge-1' } });
    expect(back.find((c) => c.type === 'SiteReachable')).toEqual({ type: 'SiteReachable', status: 'True', reason: 'SiteReachable', message: '', lastTransitionTime: T1 });
    // A host of the default site has no such condition.
    expect(at('available').some((c) => c.type === 'SiteReachable')).toBe(false);
    // Moved to the default site: the condition its old site gave it goes.
    expect(computeConditions(status, back, { now: T1, site: { name: 'default' } }).some((c) => c.type === 'SiteReachable')).toBe(false);
  });
});

describe('hardware profile names, as BMO picks them', () => {
  it("takes the spec's, else libvirt for a libvirt:// BMC, else unknown", async () => {
    const { hardwareProfileName, isHardwareProfile } = await import('../../model/hardware-profile');
    expect(hardwareProfileName({ hardwareProfile: 'dell', bmc: { address: 'libvirt://h' } })).toBe('dell');
    expect(hardwareProfileName({ bmc: { address: 'libvirt://127.0.0.1:6230' } })).toBe('libvirt');
    expect(hardwareProfileName({ bmc: { address: 'ipmi://127.0.0.1' } })).toBe('unknown');
    expect(hardwareProfileName({})).toBe('unknown');
    expect(isHardwareProfile('nope')).toBe(false);
  });
});
