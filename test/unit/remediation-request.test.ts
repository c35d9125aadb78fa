/** The remediation request's checks (API body, HostRemediation spec): each bad field named, CAPM3's bounds. */
import { describe, expect, it } from 'vitest';
import { validateRemediationRequest } from '../../model/remediation';

const fields = (input: unknown): string[] => {
  const r = validateRemediationRequest(input);
  return r.ok ? [] : r.errors.map((e) => e.field).sort();
};

describe('validateRemediationRequest', () => {
  it('accepts CAPM3\'s strategy with and without its optional fields', () => {
    expect(fields({ strategy: { type: 'Reboot' } })).toEqual([]);
    expect(fields({ strategy: { type: 'Reboot', retryLimit: 1, timeoutSeconds: 100 }, nodeHandling: 'Delete', nodeName: 'worker-3' })).toEqual([]);
  });

  it('names every bad field', () => {
    expect(fields({ strategy: { type: 'Reprovision', retryLimit: 0, timeoutSeconds: 99 }, nodeHandling: 'Drain', extra: true })).toEqual([
      'extra',
      'nodeHandling',
      'strategy.retryLimit',
      'strategy.timeoutSeconds',
      'strategy.type',
    ]);
    expect(fields({ strategy: { type: 'Reboot', retryLimit: 1.5, timeoutSeconds: 86_401 } })).toEqual(['strategy.retryLimit', 'strategy.timeoutSeconds']);
    expect(fields({})).toEqual(['strategy']);
    expect(fields([])).toEqual(['body']);
  });

  it('takes the opt-in steps beyond Metal3, naming their bad fields, and refuses reinspect without reprovision', () => {
    expect(fields({ strategy: { type: 'Reboot', reprovision: {}, reinspect: { timeoutSeconds: 600 } } })).toEqual([]);
    expect(fields({ strategy: { type: 'Reboot', reprovision: { timeoutSeconds: 299, image: 'x' }, reinspect: { timeoutSeconds: 86_401 } } })).toEqual([
      'strategy.reinspect.timeoutSeconds',
      'strategy.reprovision.image',
      'strategy.reprovision.timeoutSeconds',
    ]);
    expect(fields({ strategy: { type: 'Reboot', reprovision: true } })).toEqual(['strategy.reprovision']);
    const r = validateRemediationRequest({ strategy: { type: 'Reboot', reinspect: {} } });
    expect(r.ok ? [] : r.errors).toEqual([{ field: 'strategy.reinspect', reason: expect.stringMatching(/^needs strategy\.reprovision/) }]);
  });

  it('says what is accepted', () => {
    const r = validateRemediationRequest({ strategy: { type: 'Reboot', timeoutSeconds: 10 } });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.errors[0]!.reason).toMatch(/100/);
  });
});
