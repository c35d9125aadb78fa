/**
 * A keep-alive connection Ironic closes just as a request goes out on it
 * (a full test run saw "cannot reach Ironic … other side closed" on a plain
 * GET). No real Ironic drops a connection on cue, so a server that does is
 * the peer here: it closes the socket on the requests it is told to drop.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IronicClient, IronicError } from '../../clients/ironic/client';

let server: Server;
let url: string;
let drop = 0;
const seen: string[] = [];
beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    if (req.url === '/v1/') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ version: { version: '1.99', min_version: '1.1' } }));
      return;
    }
    if (drop > 0) {
      drop -= 1;
      req.socket.destroy();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ uuid: 'n1', name: 'ns~h', provision_state: 'available' }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

describe('a connection dropped under a request', () => {
  it('a read is sent once more and answered', async () => {
    const ironic = new IronicClient({ url });
    seen.length = 0;
    drop = 1;
    const node = await ironic.getNode('n1');
    expect(node?.uuid).toBe('n1');
    expect(seen.filter((r) => r.startsWith('GET /v1/nodes/n1'))).toHaveLength(2);
  });

  it('a read dropped twice is reported as Ironic unreachable', async () => {
    const ironic = new IronicClient({ url });
    drop = 2;
    await expect(ironic.getNode('n1')).rejects.toMatchObject({ kind: 'unavailable' });
    drop = 0;
  });

  it('a change is never sent twice', async () => {
    const ironic = new IronicClient({ url });
    await ironic.getNode('n1');
    seen.length = 0;
    drop = 1;
    const err = await ironic.setProvisionState('n1', 'active').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(IronicError);
    expect(seen.filter((r) => r.startsWith('PUT'))).toHaveLength(1);
    drop = 0;
  });
});
