/**
 * BMC calls heartbeat while they run and stop when their activity is
 * cancelled (issue 10 item 8). The activities run in the SDK's
 * MockActivityEnvironment (a real activity context: heartbeats are events,
 * cancel() aborts the context's signal) against sushy-tools behind the slow
 * BMC proxy; ipmitool against a port where no BMC answers.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CancelledFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createBmcActivities } from '../../activities/bmc/activities';
import { runIpmitool } from '../../clients/ipmi/ipmitool';
import { LocalSecretStore } from '../../clients/secrets/local-store';
import { SUSHY_URL } from '../support/env';
import { SlowBmc } from '../support/slow-bmc';
import { waitFor } from '../support/harness';
import { unusedPort } from '../support/ports';

const NS = 'bmc-cancel';
/** Read only (power is never changed here), so sharing the test stack's emulator is harmless. */
const SYSTEM = '/redfish/v1/Systems/6d660000-0000-4000-8000-000000000004';
let dir: string;
let secrets: LocalSecretStore;
const proxies: SlowBmc[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'metalflow-bmc-cancel-'));
  secrets = new LocalSecretStore(dir, randomBytes(32));
  await secrets.write(NS, 'redfish', { username: 'admin', password: 'password' });
});
afterAll(async () => {
  for (const p of proxies) await p.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function slow(delayMs: number): Promise<SlowBmc> {
  const p = new SlowBmc(SUSHY_URL, delayMs);
  await p.start();
  proxies.push(p);
  return p;
}

const target = (p: SlowBmc) => ({ ref: { namespace: NS, name: 'h' }, spec: { bmc: { address: `redfish+${p.url}${SYSTEM}`, credentialsName: 'redfish' }, online: true } });

describe('BMC activities in an activity context', () => {
  it('heartbeat while a slow BMC answers a whole session', async () => {
    const p = await slow(500);
    const env = new MockActivityEnvironment();
    let beats = 0;
    env.on('heartbeat', () => beats++);
    const acts = createBmcActivities({ secrets, heartbeatMs: 100 });
    const power = (await env.run(acts.getBmcPower, target(p))) as Awaited<ReturnType<typeof acts.getBmcPower>>;
    expect(['on', 'off']).toContain(power.state);
    // Three requests at 500 ms each, heartbeats every 100 ms: the old code sent none.
    expect(beats).toBeGreaterThan(0);
  });

  it('a cancelled call stops at once and reports the cancellation, not a BMC error', async () => {
    const p = await slow(120_000);
    const env = new MockActivityEnvironment();
    const acts = createBmcActivities({ secrets, heartbeatMs: 100 });
    const call = env.run(acts.inspectBmc, target(p)).then(
      () => undefined,
      (err: unknown) => err,
    );
    await waitFor('the BMC to receive the first request', async () => p.requests.length > 0);
    env.cancel('CANCELLED');
    const err = await call;
    expect(err).toBeInstanceOf(CancelledFailure);
  }, 60_000);
});

describe('ipmitool', () => {
  it('is killed when the caller aborts, rejecting with the caller\'s reason', async () => {
    const port = await unusedPort();
    const abort = new AbortController();
    const reason = new Error('cancelled by the test');
    let spawned = false;
    const run = runIpmitool(
      { host: '127.0.0.1', port, username: 'admin', password: 'password', retries: 30, timeoutMs: 120_000, signal: abort.signal, onSpawn: () => (spawned = true) },
      ['chassis', 'power', 'status'],
    ).then(
      () => undefined,
      (err: unknown) => err,
    );
    await waitFor('ipmitool started', async () => spawned);
    abort.abort(reason);
    expect(await run).toBe(reason);
  }, 60_000);
});
