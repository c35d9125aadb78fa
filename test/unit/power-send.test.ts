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
import { changeSeen, endState, judgeMarked, LANDING_MS, landingOver, lockedOut, ownPowerMarker, POWER_MARKER, unanswered, unansweredFrom } from '../../activities/ironic/power-send';
import { ironicFailureClass } from '../../clients/ironic/errors';
import { FAILURE } from '../../model/failures';

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

  it("Ironic's 409s by its exception: NodeLocked (and a parent's or child's) locked; a name or MAC taken a conflict; InvalidState and the rest refusals", async () => {
    const ironic = new IronicClient({ url });
    answer = { status: 409, faultstring: 'Node 1be26c0b-03f2-4d2e-ae87-c02d7f33c123 is locked by host conductor-1, please retry after the current operation is completed.' };
    const locked = await refusal(ironic.setPowerState('n1', 'power on'));
    expect(locked).toMatchObject({ kind: 'conflict', status: 409, locked: true });
    expect(lockedOut(locked)).toBe(true);
    answer = { status: 409, faultstring: 'Node n1 parent_node p1 is presently locked by host conductor-1, please retry after the current operation is completed.' };
    expect(await refusal(ironic.setPowerState('n1', 'power on'))).toMatchObject({ kind: 'conflict', locked: true });
    answer = { status: 409, faultstring: 'A node with name default~h1 already exists.' };
    const taken = await refusal(ironic.getNodeState('n1', ['name']));
    expect(taken).toMatchObject({ kind: 'conflict', status: 409 });
    expect(taken.locked).toBeUndefined();
    expect(lockedOut(taken)).toBe(false);
    answer = { status: 409, faultstring: 'A port with MAC address 52:54:00:aa:bb:cc already exists.' };
    expect(await refusal(ironic.setPowerState('n1', 'power on'))).toMatchObject({ kind: 'conflict' });
    // InvalidState and its kin: final, whatever asks again.
    answer = { status: 409, faultstring: 'Node n1 is associated with instance i1.' };
    const associated = await refusal(ironic.setPowerState('n1', 'power on'));
    expect(associated).toMatchObject({ kind: 'rejected', status: 409 });
    expect(lockedOut(associated)).toBe(false);
    expect(unanswered(associated)).toBe(false);
    answer = { status: 409, faultstring: "Node n1 can not have power_interface updated unless it is in one of allowed (manageable, enroll) states or in maintenance mode. Current state is 'active'." };
    expect(await refusal(ironic.setPowerState('n1', 'power on'))).toMatchObject({ kind: 'rejected', status: 409 });
    // Ironic's API answers a power off of a node whose disable_power_off is set with a bare PowerStateFailure: said why.
    answer = { status: 409, faultstring: 'Failed to set node power state to soft power off.' };
    const powerOff = await refusal(ironic.setPowerState('n1', 'soft power off'));
    expect(powerOff).toMatchObject({ kind: 'rejected', status: 409 });
    expect(powerOff.message).toMatch(/Failed to set node power state to soft power off\. \(the node's disable_power_off is set/);
    expect(ironicFailureClass(powerOff)).toEqual({ type: FAILURE.ironicRejected, retryable: false });
    answer = { status: 409, faultstring: 'Conflict.' };
    expect(await refusal(ironic.setPowerState('n1', 'power on'))).toMatchObject({ kind: 'rejected', status: 409 });
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

describe('a power change marked on the node, found by a later attempt with no record of it', () => {
  const marker = { key: 'host-1#7', target: 'power off' as const, lastError: null };
  const node = (power_state: string | null, target_power_state: string | null, last_error: string | null = null) => ({ power_state, target_power_state, last_error });

  it("is the attempt's own only for the same activity call; its last_error travels as it was", () => {
    expect(ownPowerMarker({ extra: { [POWER_MARKER]: marker } }, 'host-1#7')).toEqual(marker);
    expect(ownPowerMarker({ extra: { [POWER_MARKER]: marker } }, 'host-1#8')).toBeUndefined();
    expect(ownPowerMarker({ extra: { [POWER_MARKER]: marker } }, undefined)).toBeUndefined();
    expect(ownPowerMarker({ extra: {} }, 'host-1#7')).toBeUndefined();
    expect(ownPowerMarker({ extra: { [POWER_MARKER]: { key: 'host-1#7', target: 'power on', lastError: 'old' } } }, 'host-1#7')).toEqual({ key: 'host-1#7', target: 'power on', lastError: 'old' });
  });

  it('taken when the node shows it, or shows a last_error Ironic wrote since; else unanswered from now (LANDING_MS to show)', () => {
    expect(judgeMarked(node('power off', null), marker)).toEqual({ taken: true });
    expect(judgeMarked(node('power on', 'power off'), marker)).toEqual({ taken: true });
    expect(judgeMarked(node('power on', null, 'Failed to change power state to power off'), marker)).toEqual({ taken: true });
    // Queued in Ironic, or never sent: nothing on the node tells which.
    expect(judgeMarked(node('power on', null), marker, 5_000)).toEqual({ unanswered: { target: 'power off', at: 5_000 } });
    // The last_error the node had before the change is not the change's.
    expect(judgeMarked(node('power on', null, 'old'), { ...marker, lastError: 'old' }, 5_000)).toEqual({ unanswered: { target: 'power off', at: 5_000 } });
    // Another change under way (to on): not ours; ours may still come.
    expect(judgeMarked(node('power off', 'power on'), marker, 5_000)).toEqual({ unanswered: { target: 'power off', at: 5_000 } });
  });
});
