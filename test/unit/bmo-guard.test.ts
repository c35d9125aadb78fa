import { describe, expect, it } from 'vitest';
import { BMO_FIELD_MANAGER, hostWrittenByBmo, leaseHeld, RECENT_SECONDS } from '../../k8s/controller/bmo-guard';

const now = new Date('2026-12-01T12:00:00Z');
const lease = (spec: Record<string, unknown>) => ({ metadata: { name: 'baremetal-operator', namespace: 'baremetal-operator-system' }, spec });

describe("signs that Metal3's operator is active", () => {
  it('a held Lease renewed within its duration is one; an expired or released one is not', () => {
    expect(leaseHeld(lease({ holderIdentity: 'bmo-abc', leaseDurationSeconds: 15, renewTime: '2026-12-01T11:59:50.000000Z' }), now)).toMatch(
      /holds its leader Lease baremetal-operator-system\/baremetal-operator \(holder bmo-abc/,
    );
    expect(leaseHeld(lease({ holderIdentity: 'bmo-abc', leaseDurationSeconds: 15, renewTime: '2026-12-01T11:59:40.000000Z' }), now)).toBeUndefined();
    // BMO's clean stop (LeaderElectionReleaseOnCancel) clears the holder.
    expect(leaseHeld(lease({ holderIdentity: '', leaseDurationSeconds: 1, renewTime: '2026-12-01T11:59:59.900000Z' }), now)).toBeUndefined();
    expect(leaseHeld(lease({}), now)).toBeUndefined();
  });

  it("a host written by BMO's field manager recently is one; by anyone else, or long ago, it is not", () => {
    const at = (s: number) => new Date(now.getTime() - s * 1000).toISOString();
    expect(hostWrittenByBmo([{ manager: BMO_FIELD_MANAGER, operation: 'Update', time: at(5) }], now)).toMatch(/wrote this host 5 s ago/);
    expect(hostWrittenByBmo([{ manager: BMO_FIELD_MANAGER, operation: 'Update', time: at(RECENT_SECONDS + 1) }], now)).toBeUndefined();
    expect(hostWrittenByBmo([{ manager: 'kubectl-client-side-apply', time: at(1) }, { manager: 'metalflow', time: at(1) }], now)).toBeUndefined();
    expect(hostWrittenByBmo(undefined, now)).toBeUndefined();
  });
});
