/**
 * The `direct` provisioner's rules that need no peer: which specs the
 * validator accepts for it (field and reason of each refusal), and that the
 * provisioner cannot change once the host is registered.
 */
import { describe, expect, it } from 'vitest';
import { validateHostSpec } from '../../model/validate';
import { decide, registrationFingerprint, specConflict } from '../../workflows/host/decide';
import { DEFAULT_HOST_OPTIONS, type HostState } from '../../contracts/host';
import { emptyStatus, type HostSpec, type ProvisioningState } from '../../model/host';

const ref = { namespace: 'edge', name: 'node-0' };
const REDFISH = 'redfish-virtualmedia+http://127.0.0.1:8000/redfish/v1/Systems/1';
const liveIso = { url: 'http://images.example/live.iso', format: 'live-iso' as const };

const direct = (over: Partial<HostSpec> = {}): HostSpec => ({
  bmc: { address: REDFISH, credentialsName: 'node-0-bmc' },
  online: true,
  provisioner: 'direct',
  ...over,
});

function errorsOf(spec: HostSpec) {
  const r = validateHostSpec(ref, spec);
  return r.ok ? [] : r.errors;
}

describe('validation of provisioner: direct', () => {
  it.each([
    ['redfish://', 'redfish://bmc.example/redfish/v1/Systems/1'],
    ['redfish-virtualmedia+http://', REDFISH],
    ['idrac-virtualmedia://', 'idrac-virtualmedia://10.0.0.9/redfish/v1/Systems/System.Embedded.1'],
    ['ilo5-virtualmedia://', 'ilo5-virtualmedia://10.0.0.9/redfish/v1/Systems/1'],
  ])('accepts a live ISO on a %s BMC, without checksum or boot MAC', (_what, address) => {
    expect(errorsOf(direct({ bmc: { address, credentialsName: 'c' }, image: liveIso }))).toEqual([]);
  });

  it('accepts user, network and meta data (they go on a config drive beside the ISO)', () => {
    expect(errorsOf(direct({ image: liveIso, userData: { name: 'ud' }, networkData: { name: 'nd' }, metaData: { name: 'md' } }))).toEqual([]);
  });

  it('accepts an IPMI BMC without an image (power only)', () => {
    expect(errorsOf(direct({ bmc: { address: 'ipmi://127.0.0.1:6623', credentialsName: 'c' } }))).toEqual([]);
    expect(errorsOf(direct({ bmc: { address: '10.0.0.5', credentialsName: 'c' }, online: false }))).toEqual([]);
  });

  const cases: [string, Partial<HostSpec>, string, RegExp][] = [
    ['a fake:// BMC', { bmc: { address: 'fake://n0', credentialsName: 'c' }, bootMACAddress: '52:54:00:00:00:01' }, 'spec.provisioner', /fake-hardware.*provisioner ironic/],
    ['a qcow2 image', { image: { url: 'http://x/disk.qcow2', checksum: 'a'.repeat(64), format: 'qcow2' } }, 'spec.image.format', /only format "live-iso".*not "qcow2"/],
    ['an image without format', { image: { url: 'http://x/disk.img', checksum: 'a'.repeat(64) } }, 'spec.image.format', /only format "live-iso".*unset format/],
    ['an image on an IPMI BMC', { bmc: { address: 'ipmi://10.0.0.5', credentialsName: 'c' }, image: liveIso }, 'spec.image', /IPMI BMC \(ipmi:\/\/10\.0\.0\.5\) does not have/],
    ['UEFISecureBoot', { bootMode: 'UEFISecureBoot', image: liveIso }, 'spec.bootMode', /UEFI or legacy boot only/],
  ];
  it.each(cases)('rejects %s, naming the field and what is accepted', (_what, over, field, reason) => {
    const errors = errorsOf(direct(over));
    const error = errors.find((e) => e.field === field);
    expect(error, `errors were ${JSON.stringify(errors)}`).toBeDefined();
    expect(error!.reason).toMatch(reason);
  });

  it('leaves Ironic hosts as they were (qcow2 and fake:// stay valid without provisioner)', () => {
    const { provisioner: _p, ...ironic } = direct({ image: { url: 'http://x/d.qcow2', checksum: 'a'.repeat(64), format: 'qcow2' } });
    expect(errorsOf(ironic)).toEqual([]);
    expect(errorsOf({ ...ironic, provisioner: 'ironic', bmc: { address: 'fake://n', credentialsName: 'c' }, bootMACAddress: '52:54:00:00:00:01' })).toEqual([]);
  });
});

function hostState(spec: HostSpec, state: ProvisioningState): HostState {
  const status = emptyStatus();
  status.provisioning.state = state;
  return {
    ref,
    spec,
    generation: 1,
    registered: state === '' ? undefined : registrationFingerprint(spec),
    status,
    deleteRequested: false,
    opSeq: 0,
    operations: [],
    options: DEFAULT_HOST_OPTIONS,
  };
}

describe('provisioner changes', () => {
  it('are a conflict once the host is registered, running or idle, in both directions', () => {
    const d = direct();
    const { provisioner: _p, ...ironic } = d;
    for (const state of ['registering', 'available', 'provisioned', 'externally provisioned'] as const) {
      expect(specConflict(hostState(d, state), ironic, undefined)).toMatch(/spec\.provisioner cannot change from direct to ironic.*delete the host/);
      expect(specConflict(hostState(ironic, state), d, undefined)).toMatch(/from ironic to direct/);
    }
    expect(specConflict(hostState(d, 'registering'), { ...ironic, provisioner: 'ironic' }, 'enroll')).toMatch(/provisioner/);
  });

  it('are allowed before the host is registered, and an unset provisioner equals ironic', () => {
    const d = direct();
    const { provisioner: _p, ...ironic } = d;
    expect(specConflict(hostState(d, ''), ironic, undefined)).toBeUndefined();
    expect(specConflict(hostState(ironic, 'available'), { ...ironic, provisioner: 'ironic' }, undefined)).toBeUndefined();
    expect(specConflict(hostState(d, 'available'), { ...d, online: false }, undefined)).toBeUndefined();
  });
});

describe('deleting a direct host', () => {
  it('finishes at once when it never enrolled (nothing was done to the BMC), powers off otherwise; an Ironic host still registering is deleted at once, as BMO does', () => {
    const never = { ...hostState(direct(), 'registering'), registered: undefined, deleteRequested: true };
    expect(decide(never)).toEqual({ kind: 'finish' });
    const available = { ...hostState(direct(), 'available'), deleteRequested: true };
    expect(decide(available)).toEqual({ kind: 'operation', op: 'power', state: 'powering off before delete' });
    const { provisioner: _p, ...ironic } = direct();
    const ironicNever = { ...hostState(ironic, 'registering'), registered: undefined, deleteRequested: true };
    expect(decide(ironicNever)).toEqual({ kind: 'operation', op: 'delete', state: 'deleting' });
  });
});
