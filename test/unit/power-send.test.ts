/**
 * How a power change metalflow may have sent is judged (activities/ironic/power-send.ts), and the two answers it
 * is judged on, typed by the Ironic client: a change that got no answer (timed out, or its connection closed
 * under it: outcome unknown) and Ironic's NodeLocked 409. No real Ironic drops an answer or locks a node on cue,
 * so a server that does plays its part here; the stack test is test/integration/power-once.test.ts.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IronicClient, IronicError } from '../../clients/ironic/client';
import { patience } from '../../activities/ironic/back-pressure';
import { changeSeen, endState, LANDING_MS, landingOver, lockedOut, unanswered, unansweredFrom } from '../../activities/ironic/power-send';

let server: Server;
let url: string;
let answer: { status: number; faultstring: string } | 'none' | 'drop' = 'none';
beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === '/v1/') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ version: { version: '1.99', min_version: '1.1' } }));
      return;
    }
    if (answer === 'none') return; // read and never answered
    if (answer === 'drop') {
      req.resume();
      req.on('end', () => req.socket.destroy());
      return;
    }
    const body = JSON.stringify({ error_message: JSON.stringify({ faultstring: answer.faultstring, debuginfo: null }) });
    res.writeHead(answer.status, { 'content-type': 'application/json' }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(resolve));
});

const refusal = (p: Promise<unknown>): Promise<IronicError> => p.then(() => { throw new Error('expected a refusal'); }, (e: unknown) => e as IronicError);

describe('a power change that got no answer, or met a locked node, typed', () => {
  it('no answer in time and a connection closed under it: outcome unknown for a change, not for a read', async () => {
    const ironic = new IronicClient({ url, requestTimeoutMs: 300 });
    answer = 'none';
    const late = await refusal(ironic.setPowerState('n1', 'power off'));
    expect(late.kind).toBe('timed-out');
    expect(unanswered(late)).toBe(true);
    const lateRead = await refusal(ironic.getNodeState('n1', ['power_state']));
    expect(lateRead.kind).toBe('timed-out');
    expect(unanswered(lateRead)).toBe(false);
    answer = 'drop';
    const dropped = await refusal(ironic.setPowerState('n1', 'power on'));
    expect(dropped.kind).toBe('unavailable');
    expect(dropped.message).toMatch(/^Ironic PUT \/v1\/nodes\/n1\/states\/power: the connection closed before an answer .*whether Ironic carried it out is unknown$/);
    expect(unanswered(dropped)).toBe(true);
  });

  it("Ironic's NodeLocked 409 is locked; another 409 is a conflict that is not; a state refusal stays rejected", async () => {
    const ironic = new IronicClient({ url });
    answer = { status: 409, faultstring: 'Node 1be26c0b-03f2-4d2e-ae87-c02d7f33c123 is locked by host conductor-1, please retry after the current operation is completed.' };
    const locked = await refusal(ironic.setPowerState('n1', 'power on'));
    expect(locked).toMatchObject({ kind: 'conflict', status: 409, locked: true });
    expect(lockedOut(locked)).toBe(true);
    answer = { status: 409, faultstring: 'Node n1 is associated with instance i1.' };
    const other = await refusal(ironic.setPowerState('n1', 'power on'));
    expect(other.kind).toBe('conflict');
    expect(other.locked).toBeUndefined();
    expect(lockedOut(other)).toBe(false);
    answer = { status: 409, faultstring: "Node n1 can not have power_interface updated unless it is in one of allowed (manageable, enroll) states or in maintenance mode. Current state is 'active'." };
    expect(await refusal(ironic.setPowerState('n1', 'power on'))).toMatchObject({ kind: 'rejected', status: 409 });
    expect(unanswered(other)).toBe(false);
  });

  it('a NodeLocked 409 is waited out by a power change, within the bounds of back-pressure; not by any other call', async () => {
    const locked = new IronicError('conflict', 'locked', 409, undefined, undefined, { locked: true });
    expect(await patience({ firstMs: 1, maxMs: 1 }).wait(locked)).toBe(false);
    const power = patience({ locked: true, firstMs: 1, maxMs: 1, budgetMs: 50, random: () => 0.5 });
    expect(await power.wait(locked)).toBe(true);
    expect(await power.wait(new IronicError('conflict', 'other', 409))).toBe(false);
    let waits = 1;
    while (await power.wait(locked)) waits++;
    expect(waits).toBeGreaterThan(1);
    expect(waits).toBeLessThan(100);
  });
});

describe('a power change judged by the node', () => {
  const node = (power_state: string | null, target_power_state: string | null) => ({ power_state, target_power_state });

  it('on and off: reached at their end state; under way when Ironic works towards it; other when towards the other', () => {
    expect(changeSeen(node('power on', null), 'power on')).toBe('reached');
    expect(changeSeen(node('power off', 'power on'), 'power on')).toBe('under-way');
    expect(changeSeen(node('power on', 'power off'), 'power on')).toBe('other');
    expect(changeSeen(node('power off', null), 'power on')).toBe('none');
    expect(changeSeen(node(null, null), 'power on')).toBe('none');
    expect(changeSeen(node('power off', null), 'soft power off')).toBe('reached');
    expect(changeSeen(node('power on', 'power off'), 'soft power off')).toBe('under-way');
  });

  it('a reboot is never reached by a read (it ends where it began); under way while Ironic powers the node on', () => {
    expect(endState('rebooting')).toBe('power on');
    expect(endState('soft rebooting')).toBe('power on');
    expect(changeSeen(node('power on', null), 'rebooting')).toBe('none');
    expect(changeSeen(node('power on', 'power on'), 'rebooting')).toBe('under-way');
    expect(changeSeen(node('power on', 'power on'), 'soft rebooting')).toBe('under-way');
    expect(changeSeen(node('power on', 'power off'), 'rebooting')).toBe('other');
  });

  it('an unanswered change has LANDING_MS to show; the record survives heartbeat details, anything else is no record', () => {
    const u = { target: 'power off' as const, at: 1_000 };
    expect(landingOver(u, 1_000 + LANDING_MS - 1)).toBe(false);
    expect(landingOver(u, 1_000 + LANDING_MS)).toBe(true);
    expect(unansweredFrom(JSON.parse(JSON.stringify(u)))).toEqual(u);
    expect(unansweredFrom(undefined)).toBeUndefined();
    expect(unansweredFrom({ target: 'power off' })).toBeUndefined();
    expect(unansweredFrom('power off')).toBeUndefined();
  });
});
