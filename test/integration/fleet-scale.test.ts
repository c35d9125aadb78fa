/**
 * Issue 11's scale test: hosts provisioned by one fleet operation with
 * a concurrency limit, on the real stack: 12 hosts with maxConcurrent 8 in `make test`
 * (past the limit, so the limit is reached; 30 with 20 cost the serial end of the suite
 * ~2.5 minutes), 200 with 20 in `npm run test:scale` (the size). The concurrency is measured from the
 * host workflows' own operation records (every operation any of the hosts
 * ran after the fleet started), not from the fleet's counter; the peak is
 * printed. METALFLOW_FLEET_SCALE_HOSTS sets the number of hosts. It loads
 * the shared Ironic for minutes, so it runs alone (vitest.config.ts).
 */
import { describe, expect, it } from 'vitest';
import { randomMac, uniq, waitFor } from '../support/harness';
import { fleetEnded, peakOverlap, startFleet, useFleetStack, waitForFleet } from '../support/fleet-hosts';

const HOSTS = Number(process.env.METALFLOW_FLEET_SCALE_HOSTS ?? 12);
const LIMIT = Number(process.env.METALFLOW_FLEET_SCALE_LIMIT ?? 8);
const IMAGE = { url: 'http://127.0.0.1/fleet-scale.qcow2', checksum: 'a'.repeat(32), checksumType: 'md5', format: 'qcow2' };
const stack = useFleetStack();

describe('a fleet operation at scale', { timeout: 3_600_000 }, () => {
  it(`provisions ${HOSTS} hosts, never more than ${LIMIT} in an operation at once`, async () => {
    const ns = uniq('fleet-scale');
    const refs = Array.from({ length: HOSTS }, (_, i) => ({ namespace: ns, name: `s-${String(i).padStart(3, '0')}` }));
    // No inspection or cleaning: the hosts are ready sooner; the fleet's part is what is measured.
    for (const ref of refs) {
      await stack.h.hosts.put(ref, {
        spec: { bmc: { address: `fake://${ref.name}`, credentialsName: `${ref.name}-bmc` }, bootMACAddress: randomMac(), online: true, inspectionMode: 'disabled', automatedCleaningMode: 'disabled' },
        credentials: { username: 'admin', password: 'pw' },
      });
    }
    for (const ref of refs) {
      await waitFor(`${ref.name} available`, async () => {
        const v = await stack.h.hosts.get(ref);
        return v.status.provisioning.state === 'available' && v.status.poweredOn && !v.currentOperation ? true : undefined;
      }, { timeoutMs: 1_800_000, intervalMs: 1000 });
    }

    const name = uniq('scale');
    const fleetStart = new Date().toISOString();
    await startFleet(stack.base, { name, operation: { kind: 'provision', image: IMAGE }, selector: { namespace: ns }, maxConcurrent: LIMIT, hostTimeoutSeconds: 1800 });
    const done = await waitForFleet(stack.base, name, fleetEnded, 'ended', 3_000_000);
    expect(done.phase).toBe('completed');
    expect(done.counts).toMatchObject({ succeeded: HOSTS, failed: 0, skipped: 0 });

    const views = await Promise.all(refs.map((ref) => stack.h.hosts.get(ref)));
    for (const v of views) expect(v.status.provisioning).toMatchObject({ state: 'provisioned', image: { url: IMAGE.url } });
    const ops = views.flatMap((v) => v.operations.filter((o) => o.startedAt >= fleetStart));
    expect(ops.every((o) => o.endedAt !== undefined)).toBe(true);
    const peak = peakOverlap(ops.map((o) => ({ start: o.startedAt, end: o.endedAt! })));
    const fleetPeak = peakOverlap(done.hosts.map((x) => ({ start: x.startedAt!, end: x.endedAt! })));
    console.log(`fleet-scale: ${HOSTS} hosts provisioned, peak hosts in an operation ${peak} (host records), ${fleetPeak} (fleet records), ${ops.length} operations`);
    expect(peak).toBeLessThanOrEqual(LIMIT);
    expect(fleetPeak).toBeLessThanOrEqual(LIMIT);
    // One provision per host: none provisioned twice.
    expect(ops.filter((o) => o.kind === 'provision').length).toBe(HOSTS);
  });
});
