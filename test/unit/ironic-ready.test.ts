/**
 * The worker's wait for Ironic at start (workers/ironic-ready.ts): an Ironic
 * that answers 503 (starting) is waited for; one too old stops the worker.
 * The real Ironic cannot be made to answer 503 on cue, so a server that does
 * plays its part for the version document.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IronicClient } from '../../clients/ironic/client';
import { waitForIronic } from '../../workers/ironic-ready';

let server: Server;
let url: string;
let unavailable = 0;
let version = '1.99';
beforeAll(async () => {
  server = createServer((_req, res) => {
    if (unavailable > 0) {
      unavailable -= 1;
      res.writeHead(503, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error_message: 'starting' }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ version: { version, min_version: '1.1' } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

describe('waiting for Ironic at worker start', () => {
  it('waits through answers that say Ironic is not ready, with growing pauses, and says so', async () => {
    unavailable = 3;
    version = '1.99';
    const lines: string[] = [];
    const pauses: number[] = [];
    const got = await waitForIronic(new IronicClient({ url }), {
      log: (l) => lines.push(l),
      initialDelayMs: 10,
      maxDelayMs: 25,
      sleep: async (ms) => void pauses.push(ms),
    });
    expect(got).toMatch(/^1\.\d+$/);
    expect(pauses).toEqual([10, 20, 25]);
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatch(/^waiting for Ironic \(attempt 1/);
    expect(lines[3]).toMatch(/after 4 attempts/);
  });

  it('stops at once on an Ironic too old for metalflow', async () => {
    unavailable = 0;
    version = '1.10';
    const pauses: number[] = [];
    await expect(waitForIronic(new IronicClient({ url }), { log: () => undefined, sleep: async (ms) => void pauses.push(ms) })).rejects.toMatchObject({ kind: 'too-old' });
    expect(pauses).toEqual([]);
  });
});
