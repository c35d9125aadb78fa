/**
 * The fake agent's side of the agent API, as Ironic's agent client reads it
 * (ironic/drivers/modules/agent_client.py, agent_base.py): the token guards
 * every command, step lists carry the keys Ironic requires, a step is RUNNING
 * then SUCCEEDED with its result under `<kind>_result`/`<kind>_step`, a
 * second command while one runs is refused with 409 ("agent is busy"), and a
 * host that is off does not answer. Its Ironic side is tested against the real
 * Ironic (test/agent/fake-agent-states.test.ts).
 */
import { createServer, type Server } from 'node:http';
import { request } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { heartbeatExpected, heartbeaterWaitMs, kernelParams, parseStepTimes, startFakeAgent, type FakeAgent } from '../../bench/support/fake-agent';
import { unusedPort } from '../support/ports';

const TOKEN = 'T'.repeat(43);

function call(agent: FakeAgent, url: string, method: 'GET' | 'POST', body?: unknown): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, ca: agent.certificate, headers: { 'content-type': 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString() || 'null') }));
    });
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** The agent's last command once it is no longer RUNNING (or as it stands after 5 s). */
async function lastCommandOnceEnded(agent: FakeAgent, url: string): Promise<any> {
  let last: any;
  for (let i = 0; i < 100; i++) {
    last = (await call(agent, url, 'GET')).body.commands.at(-1);
    if (last.command_status !== 'RUNNING') break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return last;
}

describe('the fake agent API', () => {
  let agent: FakeAgent;
  let commands: string;

  beforeAll(async () => {
    // Ironic is not there: the host keeps looking itself up while its API answers, as IPA's does.
    agent = await startFakeAgent({ bootMs: 0, stepMs: 200, log: () => undefined });
    agent.boot({ name: 'h1', mac: '52:54:00:00:00:01', disks: [8 * 2 ** 30], cmdline: `ipa-api-url=http://127.0.0.1:${await unusedPort()} ipa-agent-token=${TOKEN} boot_method=vmedia` });
    commands = `${agent.agentUrl('h1')}/v1/commands/`;
  });
  afterAll(() => agent.close());

  it('reads the kernel command line Ironic writes', () => {
    expect(kernelParams('ipa-api-url=http://x:1 ipa-agent-token=abc=d  nofb')).toEqual({ 'ipa-api-url': 'http://x:1', 'ipa-agent-token': 'abc=d' });
  });

  it('refuses a command without the token', async () => {
    const r = await call(agent, `${commands}?wait=false&agent_token=wrong`, 'POST', { name: 'clean.get_clean_steps', params: {} });
    expect(r.status).toBe(401);
    expect((await call(agent, commands, 'GET')).status).toBe(401);
  });

  it('lists steps, runs one asynchronously and refuses a second meanwhile', async () => {
    const q = `?wait=false&agent_token=${TOKEN}`;
    const steps = await call(agent, commands + q, 'POST', { name: 'clean.get_clean_steps', params: { node: {}, ports: [] } });
    expect(steps.status).toBe(200);
    expect(steps.body.command_status).toBe('SUCCEEDED');
    expect(Object.keys(steps.body.command_result).sort()).toEqual(['clean_steps', 'hardware_manager_version']);
    for (const list of Object.values(steps.body.command_result.clean_steps) as Record<string, unknown>[][]) {
      for (const step of list) expect(Object.keys(step)).toEqual(expect.arrayContaining(['interface', 'step', 'priority']));
    }

    const step = { interface: 'deploy', step: 'erase_devices_metadata', priority: 99 };
    const run = await call(agent, commands + q, 'POST', { name: 'clean.execute_clean_step', params: { step, node: {}, ports: [], clean_version: {} } });
    expect(run.body).toMatchObject({ command_name: 'execute_clean_step', command_status: 'RUNNING' });
    const busy = await call(agent, commands + q, 'POST', { name: 'deploy.get_deploy_steps', params: { node: {}, ports: [] } });
    expect(busy.status).toBe(409);
    expect(busy.body.faultstring.toLowerCase()).toContain('agent is busy');

    const last = await lastCommandOnceEnded(agent, `${commands}?agent_token=${TOKEN}`);
    expect(last).toMatchObject({ command_name: 'execute_clean_step', command_status: 'SUCCEEDED', command_result: { clean_result: null, clean_step: step } });
  });

  it('gives a step named in stepTimes its own time, the others stepMs', async () => {
    expect(parseStepTimes('write_image=9000,power_off=3000')).toEqual({ write_image: 9000, power_off: 3000 });
    expect(parseStepTimes('')).toEqual({});
    expect(() => parseStepTimes('write_image:9000')).toThrow(/NAME=MS/);
    const slow = await startFakeAgent({ bootMs: 0, stepMs: 0, stepTimes: { write_image: 60_000 }, log: () => undefined });
    try {
      slow.boot({ name: 'h2', mac: '52:54:00:00:00:02', disks: [8 * 2 ** 30], cmdline: `ipa-api-url=http://127.0.0.1:${await unusedPort()} ipa-agent-token=${TOKEN} boot_method=vmedia` });
      const url = `${slow.agentUrl('h2')}/v1/commands/?agent_token=${TOKEN}`;
      const erase = await call(slow, url, 'POST', { name: 'clean.execute_clean_step', params: { step: { interface: 'deploy', step: 'erase_devices_metadata', priority: 99 }, node: {}, ports: [] } });
      expect(erase.body.command_status).toBe('RUNNING');
      // A 0 ms step ends on the agent's next timer tick; a GET on the kept-alive connection can come before it.
      expect(await lastCommandOnceEnded(slow, url)).toMatchObject({ command_name: 'execute_clean_step', command_status: 'SUCCEEDED' });
      const write = await call(slow, url, 'POST', { name: 'deploy.execute_deploy_step', params: { step: { interface: 'deploy', step: 'write_image', priority: 80 }, node: {}, ports: [] } });
      expect(write.body.command_status).toBe('RUNNING');
      expect((await call(slow, url, 'GET')).body.commands.at(-1).command_status).toBe('RUNNING');
    } finally {
      await slow.close();
    }
  });

  it('posts the inspection data again after a 404 (not yet inspect wait), a 409 or a 5xx, as IPA does, and gives up on another refusal', async () => {
    // Ironic's continue_inspection answers 409 while another task holds the node (the conductor that moved it to
    // "inspect wait", under load): IPA retries it, and a fake that did not left the node to its inspection timeout.
    const answers = [404, 409, 503, 202];
    const refused = [400];
    const posts: string[] = [];
    const ironic: Server = createServer((req, res) => {
      req.resume();
      const host = req.url?.startsWith('/a/') ? 'a' : 'b';
      const inspection = req.url?.endsWith('/v1/continue_inspection');
      const status = inspection ? (host === 'a' ? answers.shift() : refused.shift()) ?? 500 : 404;
      if (inspection) posts.push(`${host} ${status}`);
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(status === 202 ? { uuid: 'node-a' } : {}));
    });
    await new Promise<void>((r) => ironic.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(ironic.address() as AddressInfo).port}`;
    const logged: string[] = [];
    const fake = await startFakeAgent({ bootMs: 0, inspectionRetryWaitsMs: [10, 10, 10, 10], log: (l) => logged.push(l) });
    try {
      for (const name of ['a', 'b']) {
        fake.boot({ name, mac: `52:54:00:00:00:0${name === 'a' ? 3 : 4}`, disks: [8 * 2 ** 30], cmdline: `ipa-inspection-callback-url=${base}/${name}/v1/continue_inspection ipa-api-url=${base}/${name} ipa-agent-token=${TOKEN}` });
      }
      for (let i = 0; i < 1000 && !(fake.counts.inspections === 1 && logged.some((l) => l.startsWith('b: inspection data refused'))); i++) {
        await new Promise((r) => setTimeout(r, 10));
      }
      expect(fake.counts.inspections).toBe(1);
      expect(fake.counts.inspectionRetries).toBe(2);
      expect(posts.filter((p) => p.startsWith('a '))).toEqual(['a 404', 'a 409', 'a 503', 'a 202']);
      expect(posts.filter((p) => p.startsWith('b '))).toEqual(['b 400']);
      expect(logged).toContain('b: inspection data refused: 400');
    } finally {
      await fake.close();
      await new Promise((r) => ironic.close(r));
    }
  });

  it("heartbeats on IPA's heartbeater schedule: a finished command's heartbeat waits for the next wake-up", () => {
    const min = 5000;
    // Right after a heartbeat with a 120 s interval: the heartbeater sleeps 5 s, not 120 s, and looks again.
    expect(heartbeaterWaitMs(1000, 1000, 120_000, min)).toBe(5000);
    expect(heartbeaterWaitMs(1000 + 118_000, 1000, 120_000, min)).toBe(2000);
    expect(heartbeaterWaitMs(1000 + 130_000, 1000, 120_000, min)).toBe(0);
    // Before the lookup's first heartbeat: at once.
    expect(heartbeaterWaitMs(50_000, 0, 0, min)).toBe(0);
    expect(heartbeatExpected(50_000, 0, 0, false, min)).toBe(true);
    // A command forced one: only at a wake-up more than 5 s after the last heartbeat; unforced, only after the interval.
    expect(heartbeatExpected(1000 + 5100, 1000, 120_000, true, min)).toBe(true);
    expect(heartbeatExpected(1000 + 4000, 1000, 120_000, true, min)).toBe(false);
    expect(heartbeatExpected(1000 + 5100, 1000, 120_000, false, min)).toBe(false);
    expect(heartbeatExpected(1000 + 120_000, 1000, 120_000, false, min)).toBe(true);
  });

  it('does not answer once the host is off', async () => {
    agent.halt('h1');
    await expect(call(agent, `${commands}?agent_token=${TOKEN}`, 'GET')).rejects.toThrow();
  });
});
