import { describe, expect, it } from 'vitest';
import { StaleStatusTracker, indexedFacts, objectFacts } from '../../k8s/controller/status-scan';

const available = { provisioningState: 'available', operationalStatus: 'OK', poweredOn: false };
const inspecting = { provisioningState: 'inspecting', operationalStatus: 'OK', poweredOn: false };
const provisioned = { provisioningState: 'provisioned', operationalStatus: 'OK', poweredOn: true };

describe("the controller's status scan", () => {
  it('signals a host whose object differs from its workflow in two scans in a row, once', () => {
    const t = new StaleStatusTracker();
    expect(t.observe('ns/h', available, inspecting)).toBe(false);
    t.endScan();
    expect(t.observe('ns/h', available, inspecting)).toBe(true);
    t.endScan();
    // The same difference again: not signalled a second time.
    expect(t.observe('ns/h', available, inspecting)).toBe(false);
    t.endScan();
    expect(t.observe('ns/h', available, inspecting)).toBe(false);
  });

  it('does not signal a write still on its way (a difference seen once, then gone), nor hosts that agree', () => {
    const t = new StaleStatusTracker();
    expect(t.observe('ns/h', provisioned, available)).toBe(false);
    t.endScan();
    expect(t.observe('ns/h', provisioned, provisioned)).toBe(false);
    t.endScan();
    expect(t.observe('ns/h', provisioned, available)).toBe(false);
    t.endScan();
    expect(t.observe('ns/a', available, available)).toBe(false);
    t.endScan();
    expect(t.observe('ns/a', available, available)).toBe(false);
  });

  it('counts a new difference afresh, and forgets hosts no longer listed', () => {
    const t = new StaleStatusTracker();
    t.observe('ns/h', available, inspecting);
    t.endScan();
    expect(t.observe('ns/h', provisioned, inspecting)).toBe(false);
    t.endScan();
    expect(t.observe('ns/h', provisioned, inspecting)).toBe(true);
    t.endScan();
    t.observe('ns/g', available, inspecting);
    t.endScan();
    // ns/g missed a scan (its workflow not running): its count starts over.
    t.endScan();
    expect(t.observe('ns/g', available, inspecting)).toBe(false);
  });

  it('reads both sides as the workflow indexes them (an empty state is unmanaged) and skips what is not known yet', () => {
    expect(objectFacts({ provisioning: { state: '' }, operationalStatus: 'OK', poweredOn: true })).toEqual({ provisioningState: 'unmanaged', operationalStatus: 'OK', poweredOn: true });
    expect(objectFacts(undefined)).toBeUndefined();
    expect(indexedFacts({ MetalflowProvisioningState: ['available'], MetalflowOperationalStatus: ['OK'], MetalflowPoweredOn: [false] })).toEqual(available);
    expect(indexedFacts({ MetalflowProvisioningState: ['available'] })).toBeUndefined();
    const t = new StaleStatusTracker();
    expect(t.observe('ns/h', undefined, inspecting)).toBe(false);
    t.endScan();
    expect(t.observe('ns/h', undefined, inspecting)).toBe(false);
  });
});
