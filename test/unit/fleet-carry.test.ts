/**
 * The fleet state handed to the next run (patch fleet-packed-carry): packed,
 * it reads back exactly as it was, and 10,000 hosts fit in one Temporal
 * payload (the server refuses more than 2 MB, `limit.blobSize.error`), which
 * the unpacked state does not.
 */
import { describe, expect, it } from 'vitest';
import type { FleetHost, FleetState } from '../../contracts/fleet';
import { packFleetState, unpackFleetState } from '../../workflows/fleet/carry';

const BLOB_LIMIT = 2 * 1024 * 1024;
const AT = '2026-11-24T05:00:00.000Z';
const later = (s: number): string => new Date(Date.parse(AT) + s * 1000 + 7).toISOString();

function fleet(n: number, shape: (i: number) => Partial<FleetHost> = () => ({})): FleetState {
  const refs = Array.from({ length: n }, (_, i) => ({ namespace: i % 3 === 0 ? 'metal3-site-b' : 'metal3-site-a', name: `worker-rack07-u12-${String(i).padStart(6, '0')}` }));
  return {
    selection: { at: AT, hosts: refs.map((ref, i) => ({ ref, provisioningState: i % 2 ? 'provisioned' : 'available', bmcType: 'redfish-virtualmedia' })), missing: [{ namespace: 'metal3-site-a', name: 'gone-1' }] },
    hosts: refs.map((ref, i) => ({ ref, outcome: 'succeeded', startedAt: later(i), endedAt: later(i + 90), changeSent: true, ...shape(i) })),
    runs: 3,
  };
}

describe('fleet carry', () => {
  it('reads back exactly the state it packed: every outcome, times, flags, errors, reasons and the run controls', () => {
    const outcomes = ['pending', 'inFlight', 'succeeded', 'failed', 'skipped', 'cancelled', 'notStarted'] as const;
    const s = fleet(14, (i) => {
      const outcome = outcomes[i % outcomes.length]!;
      const h: Partial<FleetHost> = { outcome };
      if (outcome === 'pending' || outcome === 'notStarted') Object.assign(h, { startedAt: undefined, endedAt: undefined, changeSent: undefined });
      if (outcome === 'inFlight') Object.assign(h, { endedAt: undefined, changeSent: i > 7 ? true : undefined, ...(i > 7 ? { aborting: true } : {}) });
      if (outcome === 'failed') h.error = `provision failed: deploy failed on node ${i} (Ironic: "disk full")`;
      if (outcome === 'skipped' || outcome === 'cancelled') h.reason = i > 7 ? 'the host is paused' : 'the host was deleted';
      return h;
    });
    for (const h of s.hosts) for (const k of Object.keys(h) as (keyof FleetHost)[]) if (h[k] === undefined) delete h[k];
    Object.assign(s, { paused: { reason: 'change window', since: later(3) }, cancelled: { at: later(4), abortInFlight: true }, halted: { at: later(5), reason: '2 hosts failed' }, wave: 1 });

    const packed = packFleetState(s)!;
    expect(packed).toBeDefined();
    // Through JSON, as Temporal's data converter sends it.
    expect(unpackFleetState(JSON.parse(JSON.stringify(packed)))).toEqual(s);
    // Repeated strings are written once; the flags (only ever set true) come back.
    expect(s.hosts.some((h) => h.aborting) && s.hosts.some((h) => h.outcome === 'inFlight' && !h.changeSent)).toBe(true);
    expect(packed.strings.filter((x) => x === 'the host is paused')).toHaveLength(1);
  });

  it('fits 10,000 hosts in one payload, which the unpacked state does not', () => {
    const s = fleet(10_000, (i) => (i % 50 === 0 ? { outcome: 'failed', error: 'provision failed: the image checksum does not match' } : {}));
    const plain = JSON.stringify(s).length;
    const packed = JSON.stringify(packFleetState(s)).length;
    expect(plain).toBeGreaterThan(BLOB_LIMIT);
    expect(packed).toBeLessThan(BLOB_LIMIT / 2);
    expect(unpackFleetState(JSON.parse(JSON.stringify(packFleetState(s))))).toEqual(s);
  });

  it('keeps a state it cannot pack as it is: no selection, hosts not the selection in order, a time before the selection', () => {
    const s = fleet(3);
    expect(packFleetState({ hosts: s.hosts, runs: 1 })).toBeUndefined();
    expect(packFleetState({ ...s, hosts: [...s.hosts].reverse() })).toBeUndefined();
    expect(packFleetState({ ...s, hosts: s.hosts.slice(1) })).toBeUndefined();
    expect(packFleetState({ ...s, hosts: s.hosts.map((h, i) => (i === 1 ? { ...h, startedAt: later(-60) } : h)) })).toBeUndefined();
  });
});
