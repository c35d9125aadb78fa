import { describe, expect, it } from 'vitest';
import { decide } from '../../workflows/host/decide';
import { provisioningFailures, provisioningRetriesApply, recordAttempt, retryLimitReached } from '../../workflows/host/rules/provisioning-retries';
import { customDeployChanged } from '../../workflows/host/rules/custom-deploy-change';
import { loweredFailCount, retryLimitMessage } from '../../model/provisioning-retries';
import { hostState, testSpec } from '../support/host-state';

const image = { url: 'http://x/i.qcow2', checksum: 'a'.repeat(64), checksumType: 'sha256' as const };

function failedDeploy() {
  const s = hostState({ spec: testSpec({ image }), state: 'provisioning' });
  Object.assign(s.status, { operationalStatus: 'error', errorType: 'provisioning error', errorMessage: 'deploy failed: x', errorCount: 1 });
  return s;
}

describe('provisioning retries (BMO --max-provisioning-retries)', () => {
  it('deprovisions a failed deploy and counts it', () => {
    const s = failedDeploy();
    expect(provisioningRetriesApply(s)).toBe(true);
    expect(decide(s)).toEqual({ kind: 'operation', op: 'deprovision', state: 'deprovisioning', failedDeploy: true, permit: true });
  });

  it('stops at the limit for the same image, once, and counts anew for another image', () => {
    const s = hostState({ spec: testSpec({ image }), state: 'available' });
    s.status.provisioningFailCount = 5;
    s.status.lastAttemptedImage = { ...image };
    const message = 'provisioning failed 5 times, retry limit (5) reached; change image or reset provisioningFailCount to retry';
    expect(retryLimitReached(s)).toBe(message);
    expect(decide(s)).toEqual({ kind: 'fail', errorType: 'provisioning error', message });
    Object.assign(s.status, { operationalStatus: 'error', errorType: 'provisioning error', errorMessage: message });
    expect(decide(s)).toEqual({ kind: 'wait' });
    // Any field of the image (BMO's DeepEqual): here the checksum.
    s.spec = testSpec({ image: { ...image, checksum: 'b'.repeat(64) } });
    expect(provisioningFailures(s)).toBe(0);
    expect(decide(s)).toEqual({ kind: 'operation', op: 'provision', state: 'provisioning', recordAttempt: true, permit: true });
    recordAttempt(s);
    expect(s.status.provisioningFailCount).toBe(0);
    expect(s.status.lastAttemptedImage).toEqual(s.spec.image);
  });

  it('has no limit at 0, and is not asked for a delete', () => {
    const s = hostState({ spec: testSpec({ image }), state: 'available' });
    s.options = { ...s.options, maxProvisioningRetries: 0 };
    s.status.provisioningFailCount = 50;
    s.status.lastAttemptedImage = { ...image };
    expect(retryLimitReached(s)).toBeUndefined();
    expect(provisioningRetriesApply({ ...failedDeploy(), deleteRequested: true })).toBe(false);
  });
});

describe('custom deploy method changed on a provisioned host (BMO provisioningCancelled)', () => {
  const provisioned = (method: string | undefined, deployed: string | undefined, imageUrl?: string) => {
    const s = hostState({ spec: testSpec({ ...(method ? { customDeploy: { method } } : {}), ...(imageUrl ? { image: { url: imageUrl } } : {}) }), state: 'provisioned' });
    if (deployed) s.status.provisioning.customDeploy = { method: deployed };
    return s;
  };
  it('deprovisions for a changed or removed method, or a removed image under the same method', () => {
    expect(customDeployChanged(provisioned('b', 'a'))).toBe(true);
    expect(customDeployChanged(provisioned(undefined, 'a', 'http://x/i'))).toBe(true);
    const s = provisioned('a', 'a');
    s.status.provisioning.image = { url: 'http://x/i' };
    expect(customDeployChanged(s)).toBe(true);
    expect(decide(s)).toEqual({ kind: 'operation', op: 'deprovision', state: 'deprovisioning', permit: true });
  });
  it('leaves an unchanged method, and a method on a host deployed before metalflow recorded one', () => {
    expect(customDeployChanged(provisioned('a', 'a'))).toBe(false);
    expect(customDeployChanged(provisioned('a', undefined))).toBe(false);
  });
});

describe('a provisioningFailCount lowered on the object (the controller reads it as BMO reads its status)', () => {
  const held = (count: number) => ({
    provisioning: { state: 'available' },
    operationalStatus: 'error',
    errorType: 'provisioning error',
    errorMessage: retryLimitMessage(5, 5),
    provisioningFailCount: count,
  });
  it('is the count asked for when lower than the one the limit message names, and nothing otherwise', () => {
    expect(loweredFailCount(held(0))).toBe(0);
    expect(loweredFailCount(held(3))).toBe(3);
    // As the host wrote it: nothing to hand over.
    expect(loweredFailCount(held(5))).toBeUndefined();
    expect(loweredFailCount({ ...held(0), provisioning: { state: 'provisioning' } })).toBeUndefined();
    expect(loweredFailCount({ ...held(0), errorMessage: 'deploy failed: x' })).toBeUndefined();
    expect(loweredFailCount(undefined)).toBeUndefined();
  });
});
