/** `npm run bench -- --driver`: what drives the measured lifecycle (issue 11's 1,000-host comparison in two runs). */
import { describe, expect, it } from 'vitest';
import { parseOptions } from '../../bench/options';

const HELP = new URL('../../bench/run.ts', import.meta.url);
const parse = (...argv: string[]) => parseOptions(argv, HELP);

describe('bench --driver', () => {
  it('drives through the per-host API unless told otherwise, and through fleet operations when asked', () => {
    expect(parse()).toMatchObject({ driver: 'api', fleet: false });
    expect(parse('--driver', 'fleet', '--hosts', '1000', '--concurrency', '200', '--no-floor')).toMatchObject({ driver: 'fleet', hosts: 1000, floor: false });
  });

  it('runs the floor alone with --driver floor (even at --scale, which leaves the floor out otherwise), and refuses --no-floor or --fleet beside it', () => {
    expect(parse('--driver', 'floor', '--scale')).toMatchObject({ driver: 'floor', floor: true, hosts: 1000 });
    expect(() => parse('--driver', 'floor', '--no-floor')).toThrow(/--driver floor runs the floor alone/);
    expect(() => parse('--driver', 'floor', '--fleet')).toThrow(/--driver floor runs the floor alone/);
  });

  it('refuses an unknown driver and --fleet beside --driver fleet, naming the option', () => {
    expect(() => parse('--driver', 'kubectl')).toThrow('--driver must be api, fleet or floor, got "kubectl"');
    expect(() => parse('--driver', 'fleet', '--fleet')).toThrow(/--fleet .* --driver fleet/);
  });
});
