import { describe, expect, it } from 'vitest';
import { goDurationSeconds, hostRemediationNameFor } from '../../k8s/controller/capm3-remediations';
import { loadConfig } from '../../config/env';

describe('Metal3Remediation bridge', () => {
  it('reads Metal3Remediation timeouts as Go durations', () => {
    expect(goDurationSeconds('300s')).toBe(300);
    expect(goDurationSeconds('5m0s')).toBe(300);
    expect(goDurationSeconds('10m')).toBe(600);
    expect(goDurationSeconds('1h2m3s')).toBe(3723);
    for (const bad of [undefined, '', '5ms', 'ten', '-5s']) expect(goDurationSeconds(bad)).toBeUndefined();
  });
  it('names the HostRemediation after it, a valid object name', () => {
    expect(hostRemediationNameFor('worker-0')).toBe('capm3-worker-0');
    expect(hostRemediationNameFor(`${'a'.repeat(250)}`).length).toBeLessThanOrEqual(253);
  });
  it('METALFLOW_REMEDIATION_CAPM3 is off by default and only true or false', () => {
    expect(loadConfig({}).controller.remediationCapm3).toBe(false);
    expect(loadConfig({ METALFLOW_REMEDIATION_CAPM3: 'true' }).controller.remediationCapm3).toBe(true);
    expect(() => loadConfig({ METALFLOW_REMEDIATION_CAPM3: 'yes' })).toThrow(/METALFLOW_REMEDIATION_CAPM3 must be "true" or "false"/);
  });
});
