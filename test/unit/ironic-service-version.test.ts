/**
 * Servicing needs Ironic API 1.87 (the `service` verb). The test stack's Ironic is newer, and no
 * older Ironic is installed, so a server that reports an older API is the peer here: an older
 * Ironic is refused by name with nothing sent, a new enough one gets the verb at 1.87.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IronicClient, IronicError } from '../../clients/ironic/client';

let server: Server;
let url: string;
let max = '1.86';
const seen: string[] = [];
beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url} ${req.headers['x-openstack-ironic-api-version'] ?? ''}`.trim());
    res.writeHead(req.url === '/v1/' ? 200 : 202, { 'content-type': 'application/json' });
    res.end(req.url === '/v1/' ? JSON.stringify({ version: { version: max, min_version: '1.1' } }) : '');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

describe('the service verb and the Ironic API version', () => {
  it('refuses an Ironic older than 1.87 by name, sending nothing', async () => {
    max = '1.86';
    seen.length = 0;
    const err = await new IronicClient({ url }).setProvisionState('n1', 'service', { service_steps: [] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(IronicError);
    expect((err as IronicError).kind).toBe('too-old');
    expect((err as IronicError).message).toBe(
      `servicing a provisioned host (the service verb, Ironic 2023.2 / 23.0 or later) needs Ironic API 1.87 or newer; Ironic at ${url} supports up to 1.86`,
    );
    expect(seen.filter((r) => r.startsWith('PUT'))).toEqual([]);
  });

  it('sends the verb at 1.87 to an Ironic that has it, and other verbs at the negotiated version', async () => {
    max = '1.99';
    seen.length = 0;
    const ironic = new IronicClient({ url });
    await ironic.setProvisionState('n1', 'service', { service_steps: [] });
    await ironic.setProvisionState('n1', 'abort');
    expect(seen.filter((r) => r.startsWith('PUT'))).toEqual(['PUT /v1/nodes/n1/states/provision 1.87', 'PUT /v1/nodes/n1/states/provision 1.81']);
  });
});
