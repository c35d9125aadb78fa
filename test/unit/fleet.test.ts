/** Fleet operations, the pure parts: input validation, label selection, limits and the failure budget. */
import { describe, expect, it } from 'vitest';
import { fleetScope, validateFleetInput } from '../../model/fleet';
import { matchesLabelSelector, validateLabels } from '../../model/labels';
import { selectionMatches } from '../../model/fleet-selection';
import { budgetSpent, concurrencyLimit, countOutcomes, estimatedEnd, failureBudget, finished, mayStartMore } from '../../contracts/fleet-plan';
import type { FleetHost, FleetState } from '../../contracts/fleet';

const good = { name: 'rack-1-reboot', operation: { kind: 'reboot' }, selector: { namespace: 'lab' } };

describe('fleet input', () => {
  it('accepts a minimal input and every operation kind', () => {
    expect(validateFleetInput(good).ok).toBe(true);
    for (const operation of [
      { kind: 'reboot', mode: 'hard' },
      { kind: 'powerOff' },
      { kind: 'powerOn', fromFleet: 'maint' },
      { kind: 'provision', image: { url: 'http://images/u.qcow2', checksum: 'a'.repeat(32), checksumType: 'md5', format: 'qcow2' } },
      { kind: 'deprovision' },
      { kind: 'delete' },
      { kind: 'clean', steps: [{ name: 'erase-metadata' }, { name: 'bios', firmware: { sriovEnabled: true } }] },
    ]) {
      expect(validateFleetInput({ ...good, operation }), JSON.stringify(operation)).toMatchObject({ ok: true });
    }
  });

  it('names every bad field', () => {
    const fields = (input: unknown) => {
      const r = validateFleetInput(input);
      return r.ok ? [] : r.errors.map((e) => e.field);
    };
    expect(fields({ ...good, operation: { kind: 'explode' } })).toEqual(['operation.kind']);
    expect(fields({ ...good, operation: { kind: 'reboot', mode: 'gentle' } })).toEqual(['operation.mode']);
    // A fleet clean is checked as POST …/clean checks its body.
    expect(fields({ ...good, operation: { kind: 'clean', steps: [{ name: 'polish' }, { name: 'firmware', updates: [{ component: 'bmc', url: 'ftp://x/y' }] }] } })).toEqual([
      'operation.steps[0].name',
      'operation.steps[1].updates[0].url',
    ]);
    expect(fields({ ...good, operation: { kind: 'provision', image: { url: 'ftp://x/y', checksum: 'a'.repeat(32), checksumType: 'md5' } } })).toEqual(['operation.image.url']);
    expect(fields({ ...good, name: 'Not_A_Name' })).toEqual(['name']);
    expect(fields({ ...good, maxConcurrent: 0 })).toEqual(['maxConcurrent']);
    expect(fields({ ...good, maxConcurrent: '150%' })).toEqual(['maxConcurrent']);
    expect(fields({ ...good, maxFailures: -1 })).toEqual(['maxFailures']);
    expect(fields({ ...good, selector: {} })).toEqual(['selector']);
    expect(fields({ ...good, selector: { states: ['asleep'] } })).toEqual(['selector.states[0]']);
    expect(fields({ ...good, selector: { labelSelector: { matchExpressions: [{ key: 'rack', operator: 'In' }] } } })).toEqual([
      'selector.labelSelector.matchExpressions[0].values',
    ]);
    expect(fields({ ...good, selector: { hosts: [{ namespace: 'lab', name: 'UPPER' }] } })).toEqual(['selector.hosts[0].name']);
    expect(fields({ ...good, surprise: 1 })).toEqual(['surprise']);
    expect(fields({ name: 'x', selector: { namespace: 'lab' } })).toEqual(['operation']);
  });

  it('scopes permissions to the namespaces the selector allows', () => {
    expect(fleetScope({ selector: { namespace: 'lab' } })).toEqual(['lab']);
    expect(fleetScope({ selector: { hosts: [{ namespace: 'b', name: 'x' }, { namespace: 'a', name: 'y' }, { namespace: 'b', name: 'z' }] } })).toEqual(['a', 'b']);
    expect(fleetScope({ selector: { labelSelector: { matchLabels: { rack: '1' } } } })).toEqual(['*']);
  });
});

describe('labels', () => {
  it('validates keys and values as Kubernetes does', () => {
    expect(validateLabels({ rack: 'r1', 'metal3.io/role': 'worker', empty: '' }, 'metadata.labels')).toEqual([]);
    expect(validateLabels({ '-bad': 'x' }, 'metadata.labels').map((e) => e.field)).toEqual(['metadata.labels.-bad']);
    expect(validateLabels({ 'Bad_Prefix/x': 'y' }, 'metadata.labels')).toHaveLength(1);
    expect(validateLabels({ ok: 'v'.repeat(64) }, 'metadata.labels')).toHaveLength(1);
    expect(validateLabels({ ok: 'has space' }, 'metadata.labels')).toHaveLength(1);
  });

  it('matches matchLabels and every matchExpressions operator', () => {
    const labels = { rack: 'r1', role: 'worker' };
    expect(matchesLabelSelector(labels, {})).toBe(true);
    expect(matchesLabelSelector(labels, { matchLabels: { rack: 'r1' } })).toBe(true);
    expect(matchesLabelSelector(labels, { matchLabels: { rack: 'r2' } })).toBe(false);
    expect(matchesLabelSelector(labels, { matchExpressions: [{ key: 'rack', operator: 'In', values: ['r2', 'r1'] }] })).toBe(true);
    expect(matchesLabelSelector(labels, { matchExpressions: [{ key: 'rack', operator: 'NotIn', values: ['r1'] }] })).toBe(false);
    expect(matchesLabelSelector(labels, { matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['a'] }] })).toBe(true);
    expect(matchesLabelSelector(labels, { matchExpressions: [{ key: 'role', operator: 'Exists' }] })).toBe(true);
    expect(matchesLabelSelector(labels, { matchExpressions: [{ key: 'role', operator: 'DoesNotExist' }] })).toBe(false);
    expect(matchesLabelSelector(undefined, { matchExpressions: [{ key: 'role', operator: 'DoesNotExist' }] })).toBe(true);
    expect(matchesLabelSelector(labels, { matchLabels: { rack: 'r1' }, matchExpressions: [{ key: 'role', operator: 'In', values: ['infra'] }] })).toBe(false);
  });

  it('selects on every criterion at once', () => {
    const host = { ref: { namespace: 'lab', name: 'a' }, provisioningState: 'available', bmcType: 'redfish', labels: { rack: 'r1' } };
    expect(selectionMatches(host, { namespace: 'lab', states: ['available', 'provisioned'], bmcTypes: ['redfish'], labelSelector: { matchLabels: { rack: 'r1' } } })).toBe(true);
    expect(selectionMatches(host, { namespace: 'other' })).toBe(false);
    expect(selectionMatches(host, { states: ['provisioned'] })).toBe(false);
    expect(selectionMatches(host, { bmcTypes: ['ipmi'] })).toBe(false);
    expect(selectionMatches(host, { hosts: [{ namespace: 'lab', name: 'b' }] })).toBe(false);
    expect(selectionMatches(host, { hosts: [{ namespace: 'lab', name: 'a' }], labelSelector: { matchLabels: { rack: 'r2' } } })).toBe(false);
  });
});

describe('fleet arithmetic', () => {
  it('turns counts and percentages into limits', () => {
    expect(concurrencyLimit(undefined, 50)).toBe(1);
    expect(concurrencyLimit(20, 50)).toBe(20);
    expect(concurrencyLimit('10%', 15)).toBe(2); // 1.5 rounded up
    expect(concurrencyLimit('1%', 3)).toBe(1); // never 0
    expect(failureBudget(undefined, 50)).toBe(0);
    expect(failureBudget(3, 50)).toBe(3);
    expect(failureBudget('10%', 15)).toBe(1); // 1.5 rounded down
    expect(failureBudget('100%', 7)).toBe(7);
  });

  it('spends the budget only past it, and stops starting hosts but lets in-flight ones finish', () => {
    const hosts = (outcomes: FleetHost['outcome'][]): FleetHost[] => outcomes.map((outcome, i) => ({ ref: { namespace: 'n', name: `h${i}` }, outcome }));
    const state = (over: Partial<FleetState>, list: FleetHost[]): FleetState => ({ hosts: list, runs: 1, ...over });
    const one = countOutcomes(hosts(['failed', 'inFlight', 'pending']));
    expect(budgetSpent(one, 1)).toBe(false);
    expect(budgetSpent(one, 0)).toBe(true);
    const halted = state({ halted: { at: 't', reason: 'r' } }, hosts(['failed', 'inFlight', 'pending']));
    expect(mayStartMore(halted, countOutcomes(halted.hosts), 5)).toBe(false);
    expect(finished(halted, countOutcomes(halted.hosts))).toBe(false);
    const drained = hosts(['failed', 'succeeded', 'pending']);
    expect(finished(state({ halted: { at: 't', reason: 'r' } }, drained), countOutcomes(drained))).toBe(true);
    const running = hosts(['inFlight', 'inFlight', 'pending']);
    expect(mayStartMore(state({}, running), countOutcomes(running), 2)).toBe(false);
    expect(mayStartMore(state({}, running), countOutcomes(running), 3)).toBe(true);
    expect(mayStartMore(state({ paused: { since: 't' } }, running), countOutcomes(running), 3)).toBe(false);
    expect(finished(state({}, running), countOutcomes(running))).toBe(false);
  });

  it('estimates the end from the finished hosts\' pace and the rounds left', () => {
    const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();
    const hosts: FleetHost[] = [
      { ref: { namespace: 'n', name: 'a' }, outcome: 'succeeded', startedAt: at(0), endedAt: at(10) },
      { ref: { namespace: 'n', name: 'b' }, outcome: 'failed', startedAt: at(0), endedAt: at(30) },
      { ref: { namespace: 'n', name: 'c' }, outcome: 'inFlight', startedAt: at(30) },
      ...['d', 'e', 'f'].map((name): FleetHost => ({ ref: { namespace: 'n', name }, outcome: 'pending' })),
    ];
    const s: FleetState = { hosts, runs: 1 };
    // 4 hosts left, 2 at a time: 2 rounds of the mean 20 s.
    expect(estimatedEnd(s, countOutcomes(hosts), 2, Date.parse(at(30)))).toBe(at(70));
    expect(estimatedEnd({ ...s, paused: { since: at(30) } }, countOutcomes(hosts), 2, 0)).toBeUndefined();
    expect(estimatedEnd({ hosts: hosts.slice(2), runs: 1 }, countOutcomes(hosts.slice(2)), 2, 0)).toBeUndefined();
  });
});
