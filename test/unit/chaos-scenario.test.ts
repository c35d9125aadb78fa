/** `npm run chaos -- --scenario …`: which round runs, and its default size. */
import { describe, expect, it } from 'vitest';
import { parseChaosArgs, PIVOT_CHAOS_HOSTS, SITE_MOVE_CHAOS_HOSTS, type ChaosOptions } from '../../bench/chaos/options';

const parse = (...argv: string[]): ChaosOptions => parseChaosArgs(argv, {}) as ChaosOptions;

describe('chaos --scenario', () => {
  it('is the lifecycle round by default, with its 50 hosts', () => {
    expect(parse()).toMatchObject({ scenario: 'lifecycle', hosts: 50 });
  });
  it('pivot: its own default host count, --hosts and --faults-per-kind as given', () => {
    expect(parse('--scenario', 'pivot')).toMatchObject({ scenario: 'pivot', hosts: PIVOT_CHAOS_HOSTS });
    expect(parse('--scenario', 'pivot', '--hosts', '20', '--faults-per-kind', '3', '--seed', '7')).toMatchObject({ scenario: 'pivot', hosts: 20, faultsPerKind: 3, seed: 7 });
  });
  it('site-move: its own default host count, --hosts as given', () => {
    expect(parse('--scenario', 'site-move')).toMatchObject({ scenario: 'site-move', hosts: SITE_MOVE_CHAOS_HOSTS });
    expect(parse('--scenario', 'site-move', '--hosts', '8')).toMatchObject({ scenario: 'site-move', hosts: 8 });
  });
  it('refuses an unknown scenario, naming the accepted ones', () => {
    expect(() => parse('--scenario', 'fleet')).toThrow('--scenario must be lifecycle, pivot or site-move, got "fleet"');
  });
});
