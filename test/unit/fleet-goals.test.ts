/** When a host has done what a fleet operation asked, read from its view (contracts/fleet-goals.ts). */
import { describe, expect, it } from 'vitest';
import { emptyStatus } from '../../model/host';
import type { FleetOperation } from '../../model/fleet';
import type { HostView, OperationRecord } from '../../contracts/host';
import { abortedResult, fleetHostResult, imageToRestore, keysToRelease, type HostFinding } from '../../contracts/fleet-goals';
import { fleetAsk, fleetChangeUpdateId } from '../../contracts/fleet-change';

const SINCE = '2026-01-01T00:00:10.000Z';
const op = (kind: OperationRecord['kind'], outcome: OperationRecord['outcome'], startedAt = '2026-01-01T00:00:20.000Z', error?: string): OperationRecord => ({
  seq: 1, kind, inline: true, state: 'available', startedAt, outcome, ...(error ? { error } : {}),
});

function running(over: Partial<HostView> = {}, status: Partial<HostView['status']> = {}): HostFinding {
  const base = emptyStatus();
  return {
    kind: 'running',
    view: {
      ref: { namespace: 'n', name: 'h' },
      spec: { online: true },
      status: { ...base, ...status, provisioning: { ...base.provisioning, state: 'available', ...status.provisioning } },
      generation: 1,
      deleteRequested: false,
      operations: [],
      power: { holds: {} },
      ...over,
    },
  };
}

describe('fleet host goals', () => {
  it('moveSite: succeeded once at the site with no move under way; a failed move fails; a BareMetalHost host alike', () => {
    const move = { kind: 'moveSite', site: 'edge-2' } as const;
    expect(fleetHostResult(move, running({ spec: { online: true, site: 'edge-2' } }), SINCE, 'f')).toEqual({ outcome: 'succeeded' });
    expect(fleetHostResult({ kind: 'moveSite', site: 'default' }, running(), SINCE, 'f')).toEqual({ outcome: 'succeeded' });
    const underWay = { from: 'edge-1', to: 'edge-2', fromNode: 'n1', since: SINCE };
    expect(fleetHostResult(move, running({ spec: { online: true, site: 'edge-2' }, siteMove: underWay, currentOperation: op('move', 'running') }), SINCE, 'f')).toBeUndefined();
    expect(fleetHostResult(move, running({ spec: { online: true, site: 'edge-2' }, siteMove: underWay, operations: [op('move', 'failed', undefined, 'adoption failed')] }), SINCE, 'f')).toEqual({ outcome: 'failed', error: 'move failed: adoption failed' });
    expect(fleetHostResult(move, running({ spec: { online: true, site: 'edge-1' } }), SINCE, 'f')).toBeUndefined();
    // A BareMetalHost's host moves too (its label set, activities/fleet/kubernetes.ts): on its way, then done at the site.
    expect(fleetHostResult(move, running({ managedBy: 'kubernetes' }), SINCE, 'f', { kubernetes: true })).toBeUndefined();
    expect(fleetHostResult(move, running({ managedBy: 'kubernetes', spec: { online: true, site: 'edge-2' } }), SINCE, 'f', { kubernetes: true })).toEqual({ outcome: 'succeeded' });
  });

  it('reboot: succeeded only by a reboot started since the fleet started the host', () => {
    const reboot = { kind: 'reboot' } as const;
    expect(fleetHostResult(reboot, running(), SINCE, 'f')).toBeUndefined();
    expect(fleetHostResult(reboot, running({ operations: [op('reboot', 'succeeded', '2026-01-01T00:00:05.000Z')] }), SINCE, 'f')).toBeUndefined();
    expect(fleetHostResult(reboot, running({ operations: [op('reboot', 'succeeded')] }), SINCE, 'f')).toEqual({ outcome: 'succeeded' });
    expect(fleetHostResult(reboot, running({ operations: [op('reboot', 'failed', undefined, 'BMC said no')] }), SINCE, 'f')).toEqual({ outcome: 'failed', error: 'reboot failed: BMC said no' });
  });

  it('powerOff holds the fleet key until off; powerOn releases fleet keys only', () => {
    const held = running({ power: { holds: { 'fleet-f': 'soft' } } }, { poweredOn: false });
    expect(fleetHostResult({ kind: 'powerOff' }, held, SINCE, 'f')).toEqual({ outcome: 'succeeded' });
    expect(fleetHostResult({ kind: 'powerOff' }, running({ power: { holds: { 'fleet-f': 'soft' } } }, { poweredOn: true }), SINCE, 'f')).toBeUndefined();
    expect(keysToRelease({ kind: 'powerOn' }, { 'fleet-a': 'soft', 'fleet-b': 'hard', maintenance: 'soft' })).toEqual(['fleet-a', 'fleet-b']);
    expect(keysToRelease({ kind: 'powerOn', fromFleet: 'a' }, { 'fleet-a': 'soft' })).toEqual(['fleet-a']);
    // Another key keeps it off: what the fleet asked is done.
    expect(fleetHostResult({ kind: 'powerOn' }, running({ power: { holds: { maintenance: 'soft' } } }, { poweredOn: false }), SINCE, 'g')).toEqual({ outcome: 'succeeded' });
  });

  it('provision needs the image, provisioned and OK; a failed deploy is the host error', () => {
    const image = { url: 'http://i/a.qcow2' };
    const provisioned = running({ spec: { online: true, image } }, { operationalStatus: 'OK', provisioning: { ...emptyStatus().provisioning, state: 'provisioned', image } });
    expect(fleetHostResult({ kind: 'provision', image }, provisioned, SINCE, 'f')).toEqual({ outcome: 'succeeded' });
    // Asked for, but still running the image it had: not there yet (it is deprovisioned first).
    const stillOld = running({ spec: { online: true, image } }, { operationalStatus: 'OK', provisioning: { ...emptyStatus().provisioning, state: 'provisioned', image: { url: 'http://i/old.qcow2' } } });
    expect(fleetHostResult({ kind: 'provision', image }, stillOld, SINCE, 'f')).toBeUndefined();
    expect(fleetHostResult({ kind: 'provision', image: { url: 'http://i/b.qcow2' } }, provisioned, SINCE, 'f')).toBeUndefined();
    expect(fleetHostResult({ kind: 'provision', image }, running({ operations: [op('provision', 'failed', undefined, 'deploy failed')] }), SINCE, 'f')).toMatchObject({ outcome: 'failed' });
  });

  it('skips hosts that cannot act, and a delete of a gone host succeeded', () => {
    expect(fleetHostResult({ kind: 'reboot' }, running({ paused: { reason: 'maint', since: SINCE } }), SINCE, 'f')).toEqual({ outcome: 'skipped', reason: 'the host is paused (maint)' });
    expect(fleetHostResult({ kind: 'reboot' }, { kind: 'deleted' }, SINCE, 'f')).toMatchObject({ outcome: 'skipped' });
    expect(fleetHostResult({ kind: 'reboot' }, { kind: 'ended', status: 'TERMINATED' }, SINCE, 'f')).toMatchObject({ outcome: 'skipped', reason: expect.stringMatching(/TERMINATED/) });
    expect(fleetHostResult({ kind: 'reboot' }, running({ deleteRequested: true }), SINCE, 'f')).toMatchObject({ outcome: 'skipped' });
    // A BareMetalHost's host: skipped by a worker that cannot write the object, acted on by one that can (fleet-kubernetes.ts).
    expect(fleetHostResult({ kind: 'reboot' }, running({ managedBy: 'kubernetes' }), SINCE, 'f')).toMatchObject({ outcome: 'skipped', reason: expect.stringMatching(/BareMetalHost/) });
    expect(fleetHostResult({ kind: 'reboot' }, running({ managedBy: 'kubernetes' }), SINCE, 'f', { kubernetes: true })).toBeUndefined();
    expect(fleetHostResult({ kind: 'delete' }, { kind: 'deleted' }, SINCE, 'f')).toEqual({ outcome: 'succeeded' });
    expect(fleetHostResult({ kind: 'delete' }, running({ deleteRequested: true }), SINCE, 'f')).toBeUndefined();
  });

  it('a host stopped by an abort: cancelled with its reason, unless it got there or failed first', () => {
    const provision = { kind: 'provision', image: { url: 'http://i/a.qcow2', checksum: 'c'.repeat(32), checksumType: 'md5', format: 'qcow2' } } as const;
    const why = 'fleet operation f aborted: bad image';
    const stopped = (ops: OperationRecord[], over: Partial<HostView> = {}) => running({ operations: ops, paused: { reason: why, since: SINCE }, ...over }) as HostFinding & { kind: 'running' };
    const cancelled = { ...op('provision', 'cancelled'), cancelReason: `the host was paused (${why})` };
    expect(abortedResult(provision, stopped([cancelled]), SINCE, 'f', why)).toEqual({ outcome: 'cancelled', reason: `provision cancelled: the host was paused (${why})` });
    expect(abortedResult(provision, stopped([op('provision', 'failed', undefined, 'no image')]), SINCE, 'f', why)).toEqual({ outcome: 'failed', error: 'provision failed: no image' });
    // An earlier run's cancelled deploy is not this one's: this one never ran.
    expect(abortedResult(provision, stopped([{ ...cancelled, startedAt: '2026-01-01T00:00:01.000Z' }]), SINCE, 'f', why)).toEqual({
      outcome: 'cancelled',
      reason: `paused before its provision ran (${why}); unpause the host to let it go on`,
    });
    const done = running({ spec: { online: true, image: provision.image }, operations: [op('provision', 'succeeded')] }, { operationalStatus: 'OK', provisioning: { ...emptyStatus().provisioning, state: 'provisioned', image: provision.image } });
    expect(abortedResult(provision, done as HostFinding & { kind: 'running' }, SINCE, 'f', why)).toEqual({ outcome: 'succeeded' });
  });
  it('reinspect: an inspection that ended since the fleet started the host, with hardware details; never on a provisioned host', () => {
    const reinspect = { kind: 'reinspect' } as const;
    const inspected = (endedAt: string, startedAt = '2026-01-01T00:00:01.000Z') => ({ ...op('inspect', 'succeeded', startedAt), endedAt });
    const hardware = { cpu: { count: 2 } } as HostView['status']['hardware'];
    expect(fleetHostResult(reinspect, running({}, { hardware }), SINCE, 'f')).toBeUndefined();
    // An inspection running when the fleet started the host counts once it ends after that.
    expect(fleetHostResult(reinspect, running({ operations: [inspected('2026-01-01T00:00:30.000Z')] }, { hardware }), SINCE, 'f')).toEqual({ outcome: 'succeeded' });
    expect(fleetHostResult(reinspect, running({ operations: [inspected('2026-01-01T00:00:05.000Z')] }, { hardware }), SINCE, 'f')).toBeUndefined();
    expect(fleetHostResult(reinspect, running({ operations: [inspected('2026-01-01T00:00:30.000Z')] }), SINCE, 'f')).toBeUndefined();
    expect(fleetHostResult(reinspect, running({ operations: [op('inspect', 'failed', undefined, 'no agent')] }), SINCE, 'f')).toEqual({ outcome: 'failed', error: 'inspect failed: no agent' });
    const provisioned = running({}, { provisioning: { ...emptyStatus().provisioning, state: 'provisioned' } });
    expect(fleetHostResult(reinspect, provisioned, SINCE, 'f')).toMatchObject({ outcome: 'skipped', reason: expect.stringMatching(/provisioned: it is inspected only when not provisioned/) });
  });

  it('detach: the host status says detached; attach: registered again (OK), a failed registration is the host error', () => {
    expect(fleetHostResult({ kind: 'detach' }, running({}, { operationalStatus: 'OK' }), SINCE, 'f')).toBeUndefined();
    expect(fleetHostResult({ kind: 'detach' }, running({}, { operationalStatus: 'detached' }), SINCE, 'f')).toEqual({ outcome: 'succeeded' });
    expect(fleetHostResult({ kind: 'detach' }, running({ operations: [op('detach', 'failed', undefined, 'Ironic refused')] }, { operationalStatus: 'error' }), SINCE, 'f')).toMatchObject({ outcome: 'failed' });
    // Other operations leave a detached host alone; attach is what it waits for.
    expect(fleetHostResult({ kind: 'reboot' }, running({}, { operationalStatus: 'detached' }), SINCE, 'f')).toEqual({ outcome: 'skipped', reason: 'the host is detached' });
    expect(fleetHostResult({ kind: 'attach' }, running({}, { operationalStatus: 'detached' }), SINCE, 'f')).toBeUndefined();
    expect(fleetHostResult({ kind: 'attach' }, running({ operations: [op('enroll', 'failed', undefined, 'bad BMC')] }, { operationalStatus: 'error' }), SINCE, 'f')).toEqual({ outcome: 'failed', error: 'enroll failed: bad BMC' });
    expect(fleetHostResult({ kind: 'attach' }, running({}, { operationalStatus: 'OK' }), SINCE, 'f')).toEqual({ outcome: 'succeeded' });
  });

  it('clean: a clean started since the fleet started the host succeeded and the host is available; only available hosts (or in their own clean) take it', () => {
    const clean: FleetOperation = { kind: 'clean', steps: [{ name: 'bios', settings: { BootMode: 'Uefi' } }] };
    expect(fleetHostResult(clean, running(), SINCE, 'f')).toBeUndefined();
    expect(fleetHostResult(clean, running({ operations: [op('clean', 'succeeded', '2026-01-01T00:00:05.000Z')] }), SINCE, 'f')).toBeUndefined();
    expect(fleetHostResult(clean, running({ operations: [op('clean', 'succeeded'), op('prepare', 'succeeded')] }), SINCE, 'f')).toEqual({ outcome: 'succeeded' });
    const request = { request: { steps: [{ name: 'erase-metadata' as const }] }, id: 1, at: SINCE };
    expect(fleetHostResult(clean, running({ cleanRequest: request, operations: [op('clean', 'failed', undefined, 'clean step erase-metadata failed: no')] }, { provisioning: { state: 'preparing' } as HostView['status']['provisioning'] }), SINCE, 'f')).toEqual({
      outcome: 'failed',
      error: 'clean failed: clean step erase-metadata failed: no',
    });
    expect(fleetHostResult(clean, running({}, { provisioning: { state: 'provisioned' } as HostView['status']['provisioning'] }), SINCE, 'f')).toEqual({
      outcome: 'skipped',
      reason: 'the host is provisioned: a clean runs only on an available host',
    });
    expect(fleetHostResult(clean, running({ managedBy: 'kubernetes' }), SINCE, 'f', { kubernetes: true })).toMatchObject({ outcome: 'skipped', reason: expect.stringContaining('no manual clean trigger') });
  });

  it('an aborted delete is cancelled and left paused; an aborted deprovision that never ran gets its image back', () => {
    const why = 'fleet operation f aborted';
    const paused = { reason: why, since: SINCE };
    expect(abortedResult({ kind: 'delete' }, running({ deleteRequested: true, paused }) as HostFinding & { kind: 'running' }, SINCE, 'f', why)).toMatchObject({
      outcome: 'cancelled',
      reason: expect.stringMatching(/^delete stopped: the host is paused \(fleet operation f aborted\)/),
    });
    const image = { url: 'http://i/a.qcow2', checksum: 'c'.repeat(32), checksumType: 'md5', format: 'qcow2' } as const;
    const provisioned = { ...emptyStatus().provisioning, state: 'provisioned' as const, image };
    const notRun = running({ paused }, { provisioning: provisioned }) as HostFinding & { kind: 'running' };
    expect(abortedResult({ kind: 'deprovision' }, notRun, SINCE, 'f', why)).toMatchObject({ outcome: 'cancelled' });
    expect(imageToRestore({ kind: 'deprovision' }, notRun.view)).toEqual(image);
    // Deprovisioned already, or still asked for an image: nothing to put back.
    expect(imageToRestore({ kind: 'deprovision' }, (running({ paused }, { provisioning: { ...provisioned, state: 'available', image: undefined } }) as HostFinding & { kind: 'running' }).view)).toBeUndefined();
    expect(imageToRestore({ kind: 'deprovision' }, (running({ paused, spec: { online: true, image } }, { provisioning: provisioned }) as HostFinding & { kind: 'running' }).view)).toBeUndefined();
    expect(imageToRestore({ kind: 'provision', image }, notRun.view)).toBeUndefined();
  });
});

/** What the host workflow's fleetChange validator (and the fleet's read path) decides from the host's view. */
describe("a fleet's ask of a host", () => {
  const view = (over: Partial<HostView> = {}, status: Partial<HostView['status']> = {}): HostView => (running(over, status) as HostFinding & { kind: 'running' }).view;

  it('a retried reboot or clean waits for the one already asked (waiting, or run since the fleet started the host); an earlier one does not count', () => {
    const reboot = { kind: 'reboot', mode: 'hard' } as const;
    expect(fleetAsk(reboot, view(), SINCE, 'f')).toEqual({ kind: 'send' });
    expect(fleetAsk(reboot, view({ power: { holds: {}, reboot: { mode: 'hard', api: true, annotation: false } } }), SINCE, 'f')).toMatchObject({ kind: 'wait' });
    expect(fleetAsk(reboot, view({ operations: [op('reboot', 'running')] }), SINCE, 'f')).toMatchObject({ kind: 'wait' });
    expect(fleetAsk(reboot, view({ operations: [op('reboot', 'succeeded', '2026-01-01T00:00:05.000Z')] }), SINCE, 'f')).toEqual({ kind: 'send' });
    // Done since: the host's result, nothing sent.
    expect(fleetAsk(reboot, view({ operations: [op('reboot', 'succeeded')] }), SINCE, 'f')).toEqual({ kind: 'settled', result: { outcome: 'succeeded' } });
    const clean = { kind: 'clean' as const, steps: [{ name: 'erase-metadata' }] };
    expect(fleetAsk(clean, view(), SINCE, 'f')).toEqual({ kind: 'send' });
    expect(fleetAsk(clean, view({ cleanRequest: { request: { steps: [{ name: 'erase-metadata' }] }, id: 1, at: SINCE } }, { provisioning: { state: 'preparing' } as HostView['status']['provisioning'] }), SINCE, 'f')).toMatchObject({ kind: 'wait' });
    expect(fleetAsk(clean, view({ operations: [op('clean', 'running')] }), SINCE, 'f')).toMatchObject({ kind: 'wait' });
  });

  it('a host at the goal, or one that cannot take the change, is settled with its result; attach is sent to an attached host all the same', () => {
    expect(fleetAsk({ kind: 'deprovision' }, view(), SINCE, 'f')).toEqual({ kind: 'settled', result: { outcome: 'succeeded' } });
    expect(fleetAsk({ kind: 'reboot' }, view({ paused: { reason: 'maintenance', since: SINCE } }), SINCE, 'f')).toEqual({ kind: 'settled', result: { outcome: 'skipped', reason: 'the host is paused (maintenance)' } });
    expect(fleetAsk({ kind: 'clean', steps: [] }, view({}, { provisioning: { state: 'provisioned' } as HostView['status']['provisioning'] }), SINCE, 'f')).toMatchObject({ kind: 'settled', result: { outcome: 'skipped' } });
    expect(fleetAsk({ kind: 'attach' }, view(), SINCE, 'f')).toEqual({ kind: 'send' });
  });

  it("a BareMetalHost's host is changed on the object (or skipped without a Kubernetes API server); a powerOn with no fleet key waits", () => {
    expect(fleetAsk({ kind: 'deprovision' }, view({ managedBy: 'kubernetes', spec: { online: true, image: { url: 'http://i/x.qcow2', checksum: 'c'.repeat(32), checksumType: 'md5' } } }), SINCE, 'f', { kubernetes: true })).toEqual({ kind: 'viaObject' });
    expect(fleetAsk({ kind: 'reboot' }, view({ managedBy: 'kubernetes' }), SINCE, 'f')).toMatchObject({ kind: 'settled', result: { outcome: 'skipped' } });
    // A retried reboot of a BareMetalHost's host waits too (its annotation's reboot is waiting).
    expect(fleetAsk({ kind: 'reboot' }, view({ managedBy: 'kubernetes', power: { holds: {}, reboot: { mode: 'soft', api: false, annotation: true } } }), SINCE, 'f', { kubernetes: true })).toMatchObject({ kind: 'wait' });
    expect(fleetAsk({ kind: 'powerOn' }, view({ currentOperation: op('power', 'running'), power: { holds: { maintenance: 'soft' } } }, { poweredOn: false }), SINCE, 'f')).toMatchObject({ kind: 'wait' });
    expect(fleetAsk({ kind: 'powerOn' }, view({ power: { holds: { 'fleet-a': 'soft' } } }, { poweredOn: false }), SINCE, 'f')).toEqual({ kind: 'send' });
  });

  it('the update id is one per fleet, host, operation and start', () => {
    const ref = { namespace: 'n', name: 'h' };
    expect(fleetChangeUpdateId('f', ref, 'reboot', SINCE)).toBe(`fleet/f/reboot/n/h/${SINCE}`);
    expect(fleetChangeUpdateId('f', ref, 'reboot', '2026-01-01T00:00:11.000Z')).not.toBe(fleetChangeUpdateId('f', ref, 'reboot', SINCE));
  });
});
