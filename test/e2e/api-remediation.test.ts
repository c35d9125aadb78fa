/**
 * Remediation in API mode, end to end (real HTTP, Temporal, Ironic with
 * fake-hardware power): without Kubernetes there is no Node, so a
 * remediation is the power cycle alone, through the host workflow's keyed
 * power-off request (a reboot on a `disablePowerOff` host). Also the request's
 * field-named 400s and the refusal of an `online: false` host.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultPayloadConverter } from '@temporalio/common';
import type { FastifyInstance } from 'fastify';
import { callApi, serveApi } from '../support/api-client';
import { randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';

let h: Harness;
let app: FastifyInstance;
let base: string;
const NS = 'remed';

beforeAll(async () => {
  h = await startHarness();
  ({ app, base } = await serveApi(h.hosts));
});

afterAll(async () => {
  await app?.close();
  await h?.close();
});

const call = (method: 'GET' | 'PUT' | 'POST', path: string, body?: unknown) => callApi(base, method, path, body);
const hostPath = (name: string) => `/v1/namespaces/${NS}/hosts/${name}`;

async function availableHost(online: boolean, over: Record<string, unknown> = {}): Promise<string> {
  const name = uniq('rm');
  const res = await call('PUT', hostPath(name), {
    spec: { bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc-secret` }, bootMACAddress: randomMac(), online, ...over },
    credentials: { username: 'admin', password: 'x' },
  });
  expect(res.status).toBe(201);
  await waitFor('available', async () => (await call('GET', hostPath(name))).json?.status?.provisioning?.state === 'available', { timeoutMs: 240_000 });
  return name;
}

const finished = (name: string, uid: string) =>
  waitFor(
    'the remediation to end',
    async () => {
      const r = await call('GET', `${hostPath(name)}/remediations/${uid}`);
      return r.json?.outcome !== 'running' && r.json?.workflowStatus !== 'RUNNING' ? r.json : undefined;
    },
    { timeoutMs: 240_000 },
  );

describe('API-mode remediation', { timeout: 600_000 }, () => {
  it('refuses a bad strategy, naming each field', async () => {
    const res = await call('POST', `${hostPath('whatever')}/remediations`, { strategy: { type: 'Reprovision', retryLimit: 0, timeoutSeconds: 99 }, extra: 1 });
    expect(res.status).toBe(400);
    const fields = (res.json.fields as { field: string }[]).map((f) => f.field).sort();
    expect(fields).toEqual(expect.arrayContaining(['extra', 'strategy.retryLimit', 'strategy.timeoutSeconds', 'strategy.type']));
  });

  it('power-cycles the host once through a keyed power-off request, and releases it', async () => {
    const name = await availableHost(true);
    const since = new Date().toISOString();
    const res = await call('POST', `${hostPath(name)}/remediations`, { strategy: { type: 'Reboot' } });
    expect(res.status).toBe(201);
    const uid = res.json.uid as string;
    expect(res.json).toMatchObject({ powerOffKey: `metal3-remediation-${uid}`, nodeHandling: 'none', strategy: { retryLimit: 1, timeoutSeconds: 600 } });
    const done = await finished(name, uid);
    expect(done).toMatchObject({ outcome: 'succeeded', phase: 'Waiting', retryCount: 1, workflowStatus: 'COMPLETED' });
    const host = (await call('GET', hostPath(name))).json;
    expect(host.status.poweredOn).toBe(true);
    expect(host.power.holds).toEqual({});
    // One power cycle: off, then on (the host's own power-on when it became available came before).
    const power = (host.operations as { kind: string; outcome: string; startedAt: string }[]).filter((o) => o.kind === 'power' && o.outcome === 'succeeded' && o.startedAt >= since);
    expect(power).toHaveLength(2);
    // Each step is an activity labelled for the Temporal UI.
    const history = await h.client.workflow.getHandle(`remediation/${NS}/${name}/${uid}`).fetchHistory();
    const summaries = (history.events ?? [])
      .filter((e) => e.activityTaskScheduledEventAttributes && e.userMetadata?.summary)
      .map((e) => String(defaultPayloadConverter.fromPayload(e.userMetadata!.summary!)));
    expect(summaries).toEqual([
      `1-remediate: power off (key metal3-remediation-${uid})`,
      '1-remediate: wait for powered off',
      `1-remediate: release power-off key metal3-remediation-${uid}`,
      '1-remediate: wait for powered on',
    ]);
    const listed = await waitFor('listed', async () => {
      const items = (await call('GET', `${hostPath(name)}/remediations`)).json.items as { uid: string }[];
      return items.some((i) => i.uid === uid) ? items : undefined;
    });
    expect(listed.map((i) => i.uid)).toContain(uid);
  });

  it('refuses an online: false host and changes nothing', async () => {
    const name = await availableHost(false);
    const before = (await call('GET', hostPath(name))).json;
    const res = await call('POST', `${hostPath(name)}/remediations`, { strategy: { type: 'Reboot', retryLimit: 3, timeoutSeconds: 100 } });
    expect(res.status).toBe(201);
    const done = await finished(name, res.json.uid as string);
    expect(done).toMatchObject({ outcome: 'refused', phase: 'Failed', retryCount: 0 });
    const after = (await call('GET', hostPath(name))).json;
    expect(after.operations).toEqual(before.operations);
    expect(after.power).toEqual(before.power);
  });

  it('reboots a spec.disablePowerOff host instead of powering it off (patch remediation-disable-power-off-reboot)', async () => {
    const name = await availableHost(true, { disablePowerOff: true });
    const since = new Date().toISOString();
    const res = await call('POST', `${hostPath(name)}/remediations`, { strategy: { type: 'Reboot' } });
    expect(res.status).toBe(201);
    const uid = res.json.uid as string;
    const done = await finished(name, uid);
    expect(done).toMatchObject({ outcome: 'succeeded', phase: 'Waiting', retryCount: 1 });
    expect((done.steps as { step: string }[]).map((s) => s.step)).toContain('the host rebooted');
    const host = (await call('GET', hostPath(name))).json;
    expect(host.power.holds).toEqual({});
    const ops = (host.operations as { kind: string; outcome: string; startedAt: string }[]).filter((o) => o.startedAt >= since);
    // One reboot, never a power change (off).
    expect(ops.map((o) => [o.kind, o.outcome])).toEqual([['reboot', 'succeeded']]);
  });

  it('a workflow started without the API fails at once on a bad strategy, naming the field', async () => {
    const ref = { namespace: NS, name: uniq('direct') };
    const input = { ref, uid: 'u1', request: { strategy: { type: 'Reboot', retryLimit: 0 } }, kubernetes: false };
    const handle = await h.client.workflow.start('remediateWorkflow', { taskQueue: h.taskQueue, workflowId: uniq('remediation-bad'), args: [input] });
    await expect(handle.result()).rejects.toMatchObject({ cause: { message: expect.stringMatching(/^strategy\.retryLimit: must be an integer from 1 to 100/) } });
  });

  it('404 for a host that does not exist', async () => {
    const res = await call('POST', `${hostPath(uniq('none'))}/remediations`, { strategy: { type: 'Reboot' } });
    expect(res.status).toBe(404);
  });
});
