/** Fleet waves, the pure parts: the input's waves and pauseAfterWave checked with field errors, and where each wave ends. */
import { describe, expect, it } from 'vitest';
import { validateFleetInput } from '../../model/fleet';
import { waveEnds } from '../../contracts/fleet-plan';

const good = { name: 'rollout', operation: { kind: 'reboot' }, selector: { namespace: 'lab' } };
const fields = (input: unknown) => {
  const r = validateFleetInput(input);
  return r.ok ? [] : r.errors.map((e) => `${e.field}: ${e.reason}`);
};

describe('fleet waves', () => {
  it('accepts counts and percentages, with or without a pause after each', () => {
    expect(fields({ ...good, waves: [{ size: 1 }, { size: '10%' }], pauseAfterWave: true })).toEqual([]);
    expect(fields({ ...good, waves: [{ size: '100%' }] })).toEqual([]);
  });

  it('names each bad wave and a pause without waves', () => {
    const errors = fields({ ...good, waves: [{ size: 0 }, { size: '0%' }, { size: 2 }] });
    expect(errors.map((e) => e.split(':')[0])).toEqual(['waves[0].size', 'waves[1].size']);
    expect(fields({ ...good, pauseAfterWave: true })).toEqual(['pauseAfterWave: needs waves (without them the whole selection is one wave)']);
    expect(fields({ ...good, waves: [] })[0]).toMatch(/^waves/);
    expect(fields({ ...good, waves: [{ size: '150%' }] })[0]).toMatch(/^waves/);
    expect(fields({ ...good, waves: [{ size: 1, extra: true }] })[0]).toMatch(/^waves/);
  });

  it('ends each wave after its size, the last size repeating until every host is in one', () => {
    expect(waveEnds(undefined, 7)).toEqual([7]);
    expect(waveEnds([{ size: 1 }, { size: '10%' }], 25)).toEqual([1, 4, 7, 10, 13, 16, 19, 22, 25]); // 10% of 25 is 2.5, rounded up
    expect(waveEnds([{ size: 1 }, { size: 3 }], 5)).toEqual([1, 4, 5]);
    expect(waveEnds([{ size: 10 }, { size: 1 }], 4)).toEqual([4]);
    expect(waveEnds([{ size: '1%' }], 3)).toEqual([1, 2, 3]); // never an empty wave
    expect(waveEnds([{ size: 1 }], 0)).toEqual([0]);
  });
});
