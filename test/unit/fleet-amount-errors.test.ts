/**
 * A count-or-percentage field (maxConcurrent, maxFailures, a wave's size) out
 * of range is refused with its rule, not with the schema's "must be an
 * integer or a string", which -1 and "150%" both are.
 */
import { describe, expect, it } from 'vitest';
import { validateFleetInput } from '../../model/fleet';
import { validatePivotInput } from '../../model/pivot';

const fleet = { name: 'rack-7', operation: { kind: 'reboot' }, selector: { namespace: 'metal3' } };
const pivot = { name: 'to-mgmt', source: {}, target: { plane: 'mgmt' }, selector: { namespace: 'metal3' } };
const atLeastOne = 'must be a count of hosts from 1 to 100000 (e.g. 5) or a percentage of the selected hosts from "1%" to "100%" (a string, e.g. "10%")';
const fromZero = 'must be a count of hosts from 0 to 100000 (e.g. 5) or a percentage of the selected hosts from "0%" to "100%" (a string, e.g. "10%")';
const errors = (r: { ok: boolean; errors?: Array<{ field: string; reason: string }> }) => (r.ok ? [] : r.errors!);

describe('count-or-percentage fields name their rule', () => {
  for (const bad of [-1, '150%', 2.5, '10', 100_001]) {
    it(`fleet: ${JSON.stringify(bad)}`, () => {
      expect(errors(validateFleetInput({ ...fleet, maxConcurrent: bad, maxFailures: bad, waves: [{ size: 1 }, { size: bad }] }))).toEqual([
        { field: 'maxConcurrent', reason: atLeastOne },
        { field: 'maxFailures', reason: fromZero },
        { field: 'waves[1].size', reason: atLeastOne },
      ]);
    });
    it(`pivot: ${JSON.stringify(bad)}`, () => {
      expect(errors(validatePivotInput({ ...pivot, maxConcurrent: bad, maxFailures: bad }))).toEqual([
        { field: 'maxConcurrent', reason: atLeastOne },
        { field: 'maxFailures', reason: fromZero },
      ]);
    });
  }

  it('in-range values pass', () => {
    expect(validateFleetInput({ ...fleet, maxConcurrent: '100%', maxFailures: 0, waves: [{ size: 1 }, { size: '10%' }] }).ok).toBe(true);
  });
});
