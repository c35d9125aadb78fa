/**
 * Fleet-operation tests' plumbing: fake-hardware hosts created through the
 * API with labels and waited for, fleet operations started and read through
 * the API, and the peak number of intervals open at once.
 */
import { afterAll, beforeAll, expect } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { HostView } from '../../contracts/host';
import type { FleetProgress } from '../../contracts/fleet';
import { callApi, serveApi } from './api-client';
import { randomMac, startHarness, waitFor, type Harness } from './harness';
import { IronicProxy } from '../../bench/support/ironic-proxy';
import { IRONIC_URL } from './env';

/**
 * A harness and the API on it for the file's tests, started before them and stopped after;
 * `proxied`: its Ironic reached through a fault proxy the tests can hold requests at.
 */
export function useFleetStack(opts: { proxied?: boolean } = {}): { readonly h: Harness; readonly base: string; readonly proxy: IronicProxy } {
  let h: Harness | undefined;
  let api: { app: FastifyInstance; base: string } | undefined;
  let proxy: IronicProxy | undefined;
  beforeAll(async () => {
    if (opts.proxied) {
      proxy = new IronicProxy(IRONIC_URL);
      await proxy.start();
    }
    h = await startHarness(proxy ? { ironicUrl: proxy.url } : {});
    api = await serveApi(h.hosts);
  }, 120_000);
  afterAll(async () => {
    await api?.app.close();
    await h?.close();
    await proxy?.stop();
  });
  return {
    get h() {
      return h!;
    },
    get base() {
      return api!.base;
    },
    get proxy() {
      if (!proxy) throw new Error('useFleetStack({ proxied: true }) gives a proxy');
      return proxy;
    },
  };
}

export interface FleetTestHost {
  namespace: string;
  name: string;
}

/** Creates fake-hardware hosts through the API with these labels and waits until each is available and on. */
export async function availableHosts(base: string, h: Harness, namespace: string, names: string[], labels: Record<string, string>): Promise<FleetTestHost[]> {
  await Promise.all(
    names.map(async (name) => {
      const res = await callApi(base, 'PUT', `/v1/namespaces/${namespace}/hosts/${name}`, {
        metadata: { labels },
        spec: { bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc` }, bootMACAddress: randomMac(), online: true },
        credentials: { username: 'admin', password: 'pw' },
      });
      expect(res.status, res.text).toBe(201);
    }),
  );
  await Promise.all(names.map((name) => waitForHost(h, { namespace, name }, (v) => v.status.provisioning.state === 'available' && v.status.poweredOn && !v.currentOperation, 'available and on')));
  return names.map((name) => ({ namespace, name }));
}

export function waitForHost(h: Harness, ref: FleetTestHost, ok: (v: HostView) => boolean, what: string, timeoutMs = 240_000): Promise<HostView> {
  return waitFor(`${ref.namespace}/${ref.name} ${what}`, async () => {
    const v = await h.hosts.get(ref);
    return ok(v) ? v : undefined;
  }, { timeoutMs, intervalMs: 500 });
}

export async function startFleet(base: string, input: unknown): Promise<FleetProgress> {
  const res = await callApi(base, 'POST', '/v1/fleet-operations', input);
  expect(res.status, res.text).toBe(201);
  return res.json as FleetProgress;
}

export async function fleetProgress(base: string, name: string): Promise<FleetProgress> {
  const res = await callApi(base, 'GET', `/v1/fleet-operations/${name}`);
  expect(res.status, res.text).toBe(200);
  return res.json as FleetProgress;
}

export function waitForFleet(base: string, name: string, ok: (p: FleetProgress) => boolean, what: string, timeoutMs = 300_000): Promise<FleetProgress> {
  return waitFor(`fleet ${name} ${what}`, async () => {
    const p = await fleetProgress(base, name);
    return ok(p) ? p : undefined;
  }, { timeoutMs, intervalMs: 500 });
}

const ENDED = new Set(['completed', 'halted', 'cancelled', 'dryRun']);
export const fleetEnded = (p: FleetProgress): boolean => ENDED.has(p.phase) && p.counts.inFlight === 0 && p.counts.pending === (p.phase === 'dryRun' ? p.selected : 0);

/** The most intervals open at one moment (an interval ending when another starts does not overlap it). */
export function peakOverlap(intervals: Array<{ start: string; end: string }>): number {
  const points = intervals.flatMap((i) => [
    { at: Date.parse(i.start), d: 1 },
    { at: Date.parse(i.end), d: -1 },
  ]);
  points.sort((a, b) => a.at - b.at || a.d - b.d);
  let open = 0;
  let peak = 0;
  for (const p of points) {
    open += p.d;
    peak = Math.max(peak, open);
  }
  return peak;
}
