/** metal3_* series derived from the statuses the controller watches (k8s/controller/metrics.ts). */
import { describe, expect, it } from 'vitest';
import { ControllerMetrics } from '../../k8s/controller/metrics';
import { hostFacts } from '../../k8s/controller/metric-facts';
import { emptyStatus, type HostStatus } from '../../model/host';

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

  it("removes a deleted host's series, and a reconcile that finds it gone brings none back", async () => {
    const m = new ControllerMetrics({ processMetrics: false });
    const baseline = (await m.registry.metrics()).split('\n').filter((l) => l && !l.startsWith('#')).length;
    const op = { register: {}, inspect: {}, provision: { start: '2026-11-23T10:00:00Z', end: '2026-11-23T10:01:40Z' }, deprovision: {} };
    m.observe('ns', 'gone', status({ state: 'available', poweredOn: true }));
    m.observe('ns', 'gone', status({ state: 'available', poweredOn: false, operationalStatus: 'delayed' }));
    m.observe('ns', 'gone', status({ state: 'provisioned', poweredOn: true, operationHistory: op }));
    m.reconciled('ns', 'gone', true);
    m.observe('ns', 'kept', status({ state: 'available' }));
    m.reconciled('ns', 'kept', true);
    expect(await m.registry.metrics()).toContain('host="gone"');
    m.observe('ns', 'gone', undefined);
    m.reconciled('ns', 'gone', true);
    const text = await m.registry.metrics();
    expect(text).not.toContain('host="gone"');
    expect(text).toContain('metal3_reconcile_total{namespace="ns",host="kept"} 1');
    m.observe('ns', 'kept', undefined);
    // Back to the baseline, but for the unlabelled series that counted what the hosts did.
    const left = (await m.registry.metrics()).split('\n').filter((l) => l && !l.startsWith('#') && /host=/.test(l));
    expect(left).toEqual([]);
    expect(baseline).toBeGreaterThan(0);
  });

  it('counts a credentials Secret missing once per episode, from the Secret watch, and a Secret version tried, from the status', async () => {
    const m = new ControllerMetrics({ processMetrics: false });
    const missing = { credentials: { name: 's', found: false } };
    m.observe('ns', 'h', {}, missing);
    m.observe('ns', 'h', status({ state: 'registering' }), missing);
    expect(await value(m, 'metal3_credentials_missing_total')).toBe(1);
    const tried = (version: string) => ({ credentials: { name: 's', namespace: 'ns' }, credentialsVersion: version });
    const found = { credentials: { name: 's', found: true } };
    m.observe('ns', 'h', status({ state: 'registering', triedCredentials: tried('1') }), found);
    m.observe('ns', 'h', status({ state: 'inspecting', triedCredentials: tried('1') }), found);
    expect(await value(m, 'metal3_credentials_updated_total')).toBe(1);
    m.observe('ns', 'h', status({ state: 'inspecting', triedCredentials: tried('1') }), missing);
    m.observe('ns', 'h', status({ state: 'registering', triedCredentials: tried('2') }), found);
    expect(await value(m, 'metal3_credentials_missing_total')).toBe(2);
    expect(await value(m, 'metal3_credentials_updated_total')).toBe(2);
    // A restarted controller takes what it first sees as the baseline.
    const restarted = new ControllerMetrics({ processMetrics: false });
    restarted.observe('ns', 'h', status({ state: 'registering', triedCredentials: tried('2') }), found);
    expect(await value(restarted, 'metal3_credentials_updated_total')).toBe(0);
  });

  it('counts invalid credentials and config data errors from the failure the status reports, once per failure', async () => {
    const m = new ControllerMetrics({ processMetrics: false });
    m.observe('ns', 'h', status({ state: 'registering' }));
    const failed = (errorCount: number, errorMessage: string) => status({ state: 'registering', operationalStatus: 'error', errorType: 'registration error', errorCount, errorMessage });
    m.observe('ns', 'h', failed(1, 'Secret ns/s has no non-empty key "password"'));
    m.observe('ns', 'h', failed(1, 'Secret ns/s has no non-empty key "password"'));
    m.observe('ns', 'h', failed(2, 'Secret ns/s has no non-empty key "password"'));
    expect(await value(m, 'metal3_credentials_invalid_total')).toBe(2);
    m.observe('ns', 'p', status({ state: 'provisioning' }));
    m.observe('ns', 'p', status({ state: 'provisioning', operationalStatus: 'error', errorType: 'provisioning error', errorCount: 1, errorMessage: 'Secret ns/ud has no non-empty key "userData" or "value"' }));
    m.observe('ns', 'p', status({ state: 'provisioning', operationalStatus: 'error', errorType: 'provisioning error', errorCount: 2, errorMessage: 'Secret ns/nd has no non-empty key "networkData" or "value"' }));
    expect(await value(m, 'metal3_host_config_data_error_total', { host_data_type: 'userData' })).toBe(1);
    expect(await value(m, 'metal3_host_config_data_error_total', { host_data_type: 'networkData' })).toBe(1);
    expect(await value(m, 'metal3_credentials_invalid_total')).toBe(2);
  });

  it('counts registrations begun, hosts found unmanaged and detached deletes delayed', async () => {
    const m = new ControllerMetrics({ processMetrics: false });
    m.observe('ns', 'u', {});
    m.observe('ns', 'u', status({ state: 'unmanaged' }));
    m.observe('ns', 'u', status({ state: 'unmanaged' }));
    expect(await value(m, 'metal3_host_unmanaged_total')).toBe(1);
    const op = (start: string) => ({ register: { start }, inspect: {}, provision: {}, deprovision: {} });
    m.observe('ns', 'h', {});
    m.observe('ns', 'h', status({ state: 'registering', operationHistory: op('2026-11-23T10:00:00Z') }));
    m.observe('ns', 'h', status({ state: 'registering', operationHistory: op('2026-11-23T10:00:00Z') }));
    m.observe('ns', 'h', status({ state: 'registering', operationHistory: op('2026-11-23T10:05:00Z') }));
    expect(await value(m, 'metal3_host_registration_required_total')).toBe(2);
    m.observe('ns', 'd', status({ state: 'provisioned' }), { deleteDelayed: true });
    m.observe('ns', 'd', status({ state: 'provisioned' }), { deleteDelayed: true });
    expect(await value(m, 'metal3_delete_delayed_for_detached_total')).toBe(1);
  });

  it("counts the workflow giving up a delete's cleanup as BMO does, and not a cleanup that succeeds", async () => {
    const m = new ControllerMetrics({ processMetrics: false });
    const failing = (state: HostStatus['provisioning']['state'], errorCount: number, errorType: HostStatus['errorType'] = 'provisioning error') =>
      status({ state, operationalStatus: 'error', errorType, errorCount, errorMessage: 'boom' });
    m.observe('ns', 'ok', status({ state: 'deprovisioning' }));
    m.observe('ns', 'ok', status({ state: 'powering off before delete' }));
    m.observe('ns', 'ok', status({ state: 'deleting' }));
    m.observe('ns', 'a', failing('deprovisioning', 4));
    m.observe('ns', 'a', failing('powering off before delete', 0));
    m.observe('ns', 'a', failing('powering off before delete', 4, 'power management error'));
    m.observe('ns', 'a', status({ state: 'deleting' }));
    expect(await value(m, 'metal3_delete_without_deprovisioning_total')).toBe(1);
    expect(await value(m, 'metal3_delete_without_powering_off_total')).toBe(1);
    // A host that cannot be registered goes from deprovisioning straight to deleting: BMO's powering-off counter.
    m.observe('ns', 'b', failing('deprovisioning', 4, 'registration error'));
    m.observe('ns', 'b', status({ state: 'deleting' }));
    expect(await value(m, 'metal3_delete_without_deprovisioning_total')).toBe(1);
    expect(await value(m, 'metal3_delete_without_powering_off_total')).toBe(2);
  });

  it('registers every series BMO has, those metalflow never increments at 0', async () => {
    const text = await new ControllerMetrics({ processMetrics: false }).registry.metrics();
    for (const name of [
      'credentials_missing', 'credentials_invalid', 'credentials_unhandled_error', 'credentials_updated', 'credentials_no_management_access',
      'host_registration_required', 'host_unmanaged', 'delete_without_deprovisioning', 'delete_without_powering_off',
      'provisioner_not_ready', 'delete_delayed_for_detached', 'waiting_for_preprov_image',
    ]) expect(text).toMatch(new RegExp(`^metal3_${name}_total 0$`, 'm'));
    expect(text).toMatch(/^# TYPE metal3_host_config_data_error_total counter$/m);
  });

  it("reads a host's facts: its credentials Secret in the Secret watch, a delete held by detached with deleteAction delay", () => {
    const host = (annotations: Record<string, string>, deletionTimestamp?: string) => ({
      metadata: { name: 'h', namespace: 'ns', annotations, ...(deletionTimestamp ? { deletionTimestamp } : {}) },
      spec: { bmc: { address: 'redfish://x', credentialsName: 's' } },
    });
    const has = (ns: string, n: string) => `${ns}/${n}` === 'ns/s';
    const none = () => false;
    expect(hostFacts(host({}), has)).toEqual({ credentials: { name: 's', found: true } });
    expect(hostFacts(host({}), none)).toEqual({ credentials: { name: 's', found: false } });
    const detached = { 'baremetalhost.metal3.io/detached': '{"deleteAction":"delay"}' };
    expect(hostFacts(host(detached), has).deleteDelayed).toBeUndefined();
    expect(hostFacts(host(detached, '2026-11-23T10:00:00Z'), has).deleteDelayed).toBe(true);
    expect(hostFacts(host({ 'baremetalhost.metal3.io/detached': '' }, '2026-11-23T10:00:00Z'), has).deleteDelayed).toBeUndefined();
  });
});
