/** metal3_* series derived from the statuses the controller watches (k8s/controller/metrics.ts). */
import { describe, expect, it } from 'vitest';
import { ControllerMetrics } from '../../k8s/controller/metrics';
import { emptyStatus, type HostStatus } from '../../types/host';

const status = (over: Partial<HostStatus> & { state?: HostStatus['provisioning']['state'] } = {}): HostStatus => {
  const { state, ...rest } = over;
  return { ...emptyStatus(), ...rest, provisioning: { state: state ?? 'available', ID: 'n' } };
};
const value = async (m: ControllerMetrics, name: string, labels: Record<string, string> = {}) =>
  (await m.registry.getSingleMetric(name)!.get()).values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l) && (!('le' in v.labels) || labels.le !== undefined))?.value ?? 0;

describe('ControllerMetrics', () => {
  it('takes a host first seen as the baseline: a restarted controller counts nothing twice', async () => {
    const m = new ControllerMetrics({ processMetrics: false });
    m.observe('ns', 'h', status({ state: 'provisioned', errorCount: 3, errorType: 'provisioning error' }));
    expect(await value(m, 'metal3_provisioning_state_change_total')).toBe(0);
    expect(await value(m, 'metal3_host_error_total')).toBe(0);
  });

  it('counts state changes, failures by BMO error type, power changes and operation durations', async () => {
    const m = new ControllerMetrics({ processMetrics: false });
    m.observe('ns', 'h', status({ state: 'available', poweredOn: true }));
    m.observe('ns', 'h', status({ state: 'provisioning', poweredOn: true }));
    m.observe('ns', 'h', status({ state: 'provisioning', poweredOn: true, operationalStatus: 'error', errorType: 'provisioning error', errorCount: 2 }));
    const op = { register: {}, inspect: {}, provision: { start: '2026-11-23T10:00:00Z', end: '2026-11-23T10:01:40Z' }, deprovision: {} };
    m.observe('ns', 'h', status({ state: 'provisioned', poweredOn: false, operationHistory: op }));
    // The same status again (a resync) observes nothing more.
    m.observe('ns', 'h', status({ state: 'provisioned', poweredOn: false, operationHistory: op }));
    expect(await value(m, 'metal3_provisioning_state_change_total', { prev_state: 'available', new_state: 'provisioning' })).toBe(1);
    expect(await value(m, 'metal3_provisioning_state_change_total', { prev_state: 'provisioning', new_state: 'provisioned' })).toBe(1);
    expect(await value(m, 'metal3_host_error_total', { error_type: 'ProvisioningError' })).toBe(2);
    expect(await value(m, 'metal3_operation_power_change_total', { namespace: 'ns', host: 'h', on_off: 'off' })).toBe(1);
    const text = await m.registry.metrics();
    expect(text).toContain('metal3_operation_provision_duration_seconds_sum{namespace="ns",host="h"} 100');
    expect(text).toContain('metal3_operation_provision_duration_seconds_bucket{le="90",namespace="ns",host="h"} 0');
    expect(text).toContain('metal3_operation_provision_duration_seconds_bucket{le="180",namespace="ns",host="h"} 1');
  });

  it('counts hosts delayed by the provisioning limit, as BMO: provisioning and deprovisioning apart, once per wait', async () => {
    const m = new ControllerMetrics({ processMetrics: false });
    m.observe('ns', 'a', status({ state: 'registering' }));
    m.observe('ns', 'a', status({ state: 'registering', operationalStatus: 'delayed' }));
    m.observe('ns', 'a', status({ state: 'registering', operationalStatus: 'delayed' }));
    m.observe('ns', 'a', status({ state: 'inspecting' }));
    m.observe('ns', 'b', status({ state: 'provisioned' }));
    m.observe('ns', 'b', status({ state: 'provisioned', operationalStatus: 'delayed' }));
    expect(await value(m, 'metal3_delayed__provisioning_total', { namespace: 'ns', host: 'a' })).toBe(1);
    expect(await value(m, 'metal3_delayed__deprovisioning_total', { namespace: 'ns', host: 'b' })).toBe(1);
    expect(await value(m, 'metal3_delayed__provisioning_total', { namespace: 'ns', host: 'b' })).toBe(0);
  });

  it('forgets a deleted host, and counts reconciles and their errors', async () => {
    const m = new ControllerMetrics({ processMetrics: false });
    m.observe('ns', 'h', status({ state: 'provisioned' }));
    m.observe('ns', 'h', undefined);
    m.observe('ns', 'h', status({ state: 'available' }));
    expect(await value(m, 'metal3_provisioning_state_change_total')).toBe(0);
    m.reconciled('ns', 'h', true);
    m.reconciled('ns', 'h', false);
    expect(await value(m, 'metal3_reconcile_total', { namespace: 'ns', host: 'h' })).toBe(2);
    expect(await value(m, 'metal3_reconcile_error_total')).toBe(1);
  });
});
