/**
 * The corpus's spec and annotation cases against the validators themselves
 * (no stack): each is refused naming its field. test/e2e/malformed-input.test.ts
 * sends them through the real API.
 */
import { describe, expect, it } from 'vitest';
import { validateHostSpec } from '../../model/validate';
import { fullSpec, generatedSpecCases, SPEC_CASES, type SpecCase } from '../../bench/support/malformed-corpus';
import { runAnnotationCorpus } from '../../bench/support/malformed-run';

const ref = { namespace: 'corpus', name: 'host-0' };
const base = { address: 'fake://host-0', credentialsName: 'host-0-bmc', mac: '52:54:00:aa:bb:cc', namespace: 'corpus' };
const specOf = (c: SpecCase) => {
  const spec = fullSpec(base);
  c.mutate(spec);
  return JSON.parse(JSON.stringify(spec)) as unknown;
};

describe('malformed-input corpus (validators)', () => {
  it('starts from a valid spec', () => {
    expect(validateHostSpec(ref, fullSpec(base)).ok).toBe(true);
  });

  const cases = [...SPEC_CASES, ...generatedSpecCases(fullSpec(base), 10, 40)];
  it.each(cases.map((c) => [c.name, c] as const))('%s: refused naming the field', (_name, c) => {
    const result = validateHostSpec(ref, specOf(c));
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.errors.map((e) => e.field)).toContain(c.field);
  });

  it('generates the same cases from the same seed, other ones from another', () => {
    const names = (seed: number) => generatedSpecCases(fullSpec(base), seed, 20).map((c) => c.name);
    expect(names(3)).toEqual(names(3));
    expect(names(3)).not.toEqual(names(4));
  });

  it('refuses every annotation case naming the annotation and what it accepts', () => {
    const failures: { name: string; problem: string }[] = [];
    const r = runAnnotationCorpus(failures);
    expect(failures).toEqual([]);
    expect(r.rejectedNamingTheAnnotation).toBe(r.checked);
    expect(r.checked).toBeGreaterThanOrEqual(20);
  });
});
