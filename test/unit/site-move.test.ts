/**
 * A registered host moving between sites (workflows/host/site-move.ts, docs/sites.md): which site changes
 * start a move, which are refused and why, and what the host decides while one is under way. The move
 * itself, on real Ironics and site workers: test/integration/sites.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { siteLabelRefusal } from '../../k8s/controller/site-label';
import { decide } from '../../workflows/host/decide';
import { interruptReason } from '../../workflows/host/interrupt';
import { homeSite, siteChangeConflict, siteMoveFor } from '../../workflows/host/rules/site';
import type { HostState } from '../../contracts/host';
import { hostState, testSpec } from '../support/host-state';

const IMAGE = { url: 'http://x/i.qcow2', checksum: 'a'.repeat(64) };
const AT = '2026-12-03T05:00:00.000Z';

const atA = (over: Parameters<typeof hostState>[0] = {}): HostState =>
  hostState({ spec: testSpec({ image: IMAGE, site: 'a' }), state: 'provisioned', ID: 'node-a', ...over });
const movingToC = (over: Partial<NonNullable<HostState['siteMove']>> = {}): HostState => {
  const s = atA();
  s.spec = testSpec({ image: IMAGE, site: 'c' });
  s.siteMove = { from: 'a', to: 'c', fromNode: 'node-a', since: AT, ...over };
  return s;
};

describe('a change of spec.site', () => {
  it('of a host nothing of its site holds is a plain change, as before', () => {
    const s = hostState({ spec: testSpec({ site: 'a' }), state: 'unmanaged' });
    expect(siteChangeConflict(s, testSpec({ site: 'c' }), undefined)).toBeUndefined();
    expect(siteMoveFor(s, testSpec({ site: 'c' }), AT)).toBeUndefined();
  });

  it.each(['provisioned', 'externally provisioned', 'available'] as const)('of a registered host at rest (%s) is accepted and starts a move from its node', (state) => {
    const s = atA({ state });
    const next = testSpec({ image: IMAGE, site: 'c' });
    expect(siteChangeConflict(s, next, undefined)).toBeUndefined();
    expect(siteMoveFor(s, next, AT)).toEqual({ from: 'a', to: 'c', fromNode: 'node-a', since: AT });
    // To or from the default site alike.
    expect(siteMoveFor(s, testSpec({ image: IMAGE }), AT)).toMatchObject({ from: 'a', to: 'default' });
  });

  it.each([
    ['an operation running', () => atA(), 'power', /power is running; it moves once it is at rest/],
    ['a state that is not at rest', () => atA({ state: 'inspecting' }), undefined, /moves only while provisioned, externally provisioned, available \(it is inspecting\)/],
    ['a DHCP reservation', () => Object.assign(atA(), { spec: testSpec({ image: IMAGE, site: 'a', dhcp: { mac: '52:54:00:00:00:01' } as never }) }), undefined, /spec\.dhcp/],
    ['a detached host', () => Object.assign(atA(), { detached: true }), undefined, /no Ironic node of its own now/],
    ['the direct provisioner', () => atA({ spec: testSpec({ image: IMAGE, site: 'a', provisioner: 'direct' }) }), undefined, /only hosts of the Ironic provisioner/],
  ] as const)('is refused with %s, naming why', (_what, host, running, why) => {
    const s = host();
    const next = { ...s.spec!, site: 'c' };
    expect(siteChangeConflict(s, next, running)).toMatch(/^spec\.site: the host is \S.* at site "a"; it cannot move to site "c" now: /);
    expect(siteChangeConflict(s, next, running)).toMatch(why);
  });

  it('in Kubernetes mode moves a registered host at rest as in API mode, its refusals naming the site label', () => {
    const k8s = (s: HostState): HostState => Object.assign(s, { options: { ...s.options, publishStatus: true } });
    const s = k8s(atA());
    const next = testSpec({ image: IMAGE, site: 'c' });
    expect(siteChangeConflict(s, next, undefined)).toBeUndefined();
    expect(siteMoveFor(s, next, AT, () => true)).toEqual({ from: 'a', to: 'c', fromNode: 'node-a', since: AT });
    // The same refusals as API mode, named by the label (what the controller tells a site refusal by).
    expect(siteChangeConflict(s, next, 'power')).toBe(
      'metadata.labels["metalflow.io/site"]: the host is provisioned with Ironic node node-a, power running at site "a"; it cannot move to site "c" now: power is running; it moves once it is at rest',
    );
    expect(siteChangeConflict(k8s(Object.assign(atA(), { detached: true })), next, undefined)).toMatch(/^metadata\.labels\["metalflow\.io\/site"\]: .*no Ironic node of its own now/);
    const moving = k8s(movingToC());
    expect(siteChangeConflict(moving, testSpec({ image: IMAGE, site: 'd' }), undefined)).toMatch(
      /^metadata\.labels\["metalflow\.io\/site"\]: the host is moving from site "a" to site "c"; metadata\.labels\["metalflow\.io\/site"\] can go back to "a"/,
    );
    // Set back before the switch: taken, and the move is undone (below).
    expect(siteChangeConflict(moving, testSpec({ image: IMAGE, site: 'a' }), undefined)).toBeUndefined();
  });

  it("in Kubernetes mode, on the patch's old branch (a run recorded before it), starts no move: a BareMetalHost never moved then", () => {
    const s = atA();
    s.options = { ...s.options, publishStatus: true };
    expect(siteMoveFor(s, testSpec({ image: IMAGE, site: 'c' }), AT, () => false)).toBeUndefined();
  });

  it('during a move: back to the old site undoes it while it waits; another site, or any change while it runs or after its switch, is refused', () => {
    const s = movingToC();
    expect(siteChangeConflict(s, testSpec({ image: IMAGE, site: 'a' }), undefined)).toBeUndefined();
    expect(siteMoveFor(s, testSpec({ image: IMAGE, site: 'a' }), AT)).toBeUndefined();
    expect(siteChangeConflict(s, testSpec({ image: IMAGE, site: 'd' }), undefined)).toMatch(/moving from site "a" to site "c"; spec\.site can go back to "a" \(which undoes the move\) or stay "c"/);
    expect(siteChangeConflict(s, testSpec({ image: IMAGE, site: 'a' }), 'move')).toMatch(/moving from site "a" to site "c" now/);
    expect(siteChangeConflict(movingToC({ switched: true }), testSpec({ image: IMAGE, site: 'a' }), undefined)).toMatch(/moving from site "a" to site "c" now/);
  });
});

describe('a host moving between sites', () => {
  it('moves before anything else, a delete included; its hardware calls go to the old site until the switch', () => {
    const s = movingToC();
    s.deleteRequested = true;
    expect(decide(s)).toEqual({ kind: 'operation', op: 'move', state: 'provisioned' });
    expect(homeSite(s)).toBe('a');
    expect(homeSite(movingToC({ switched: true }))).toBe('c');
    expect(homeSite(atA())).toBe('a');
  });

  it('paused, waits: the move touches the hardware', () => {
    const s = movingToC();
    s.paused = { reason: 'x', since: AT };
    expect(decide(s).kind).toBe('pause');
  });

  it('undone for a delete, stays at the old site and is deleted there', () => {
    const s = movingToC({ back: true, undone: true });
    s.deleteRequested = true;
    expect(homeSite(s)).toBe('a');
    expect(decide(s)).toEqual({ kind: 'operation', op: 'deprovision', state: 'deprovisioning', permit: true });
  });

  it('stops before its switch when withdrawn or deleted, never after it, never for a pause, never while undone', () => {
    const s = movingToC();
    expect(interruptReason(s, 'move')).toBeUndefined();
    s.paused = { reason: 'x', since: AT };
    expect(interruptReason(s, 'move')).toBeUndefined();
    s.spec = testSpec({ image: IMAGE, site: 'a' });
    expect(interruptReason(s, 'move')).toBe('the move to site "c" was withdrawn (spec.site is "a")');
    const deleted = movingToC();
    deleted.deleteRequested = true;
    expect(interruptReason(deleted, 'move')).toBe('the host is being deleted');
    deleted.siteMove!.switched = true;
    expect(interruptReason(deleted, 'move')).toBeUndefined();
    const undoing = movingToC({ back: true });
    undoing.spec = testSpec({ image: IMAGE, site: 'a' });
    expect(interruptReason(undoing, 'move')).toBeUndefined();
  });
});

describe("the controller's reading of a refused update", () => {
  it("tells the host's refusal of its site label from any other refusal", () => {
    const refused = (type: string, message: string) => new WorkflowUpdateFailedError('Workflow Update failed', ApplicationFailure.create({ type, message }));
    const why = 'metadata.labels["metalflow.io/site"]: the host is moving from site "a" to site "c" now; its site can change again once the move has ended';
    expect(siteLabelRefusal(refused('Conflict', why))).toBe(why);
    expect(siteLabelRefusal(refused('Conflict', 'spec.image: a provision is running'))).toBeUndefined();
    expect(siteLabelRefusal(refused('InvalidSpec', why))).toBeUndefined();
    expect(siteLabelRefusal(new Error(why))).toBeUndefined();
  });
});
