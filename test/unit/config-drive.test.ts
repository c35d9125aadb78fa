/**
 * The config drive as built (genisoimage) and stored: read back with isoinfo
 * (volume id config-2, the OpenStack layout, the content), the same content
 * under the same unguessable name, a host's older drive deleted, and the
 * server's route serving only names of the store's form that exist.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConfigDrive, ConfigDriveStore } from '../../clients/images/config-drive';

const dir = mkdtempSync(join(tmpdir(), 'mf-cd-unit-'));
const store = new ConfigDriveStore(dir);
let server: Server;
let base: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    if (!store.route(req, res, (req.url ?? '/').split('?')[0] ?? '/')) res.writeHead(418).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

const isoinfo = (iso: Buffer, ...args: string[]): string => {
  const file = join(dir, `read-${Math.random().toString(16).slice(2)}.iso`);
  writeFileSync(file, iso);
  try {
    return execFileSync('isoinfo', [...args, '-i', file], { encoding: 'utf8' });
  } finally {
    rmSync(file);
  }
};

describe('config drive', () => {
  it('is an ISO 9660 volume labelled config-2 with the OpenStack layout', async () => {
    const iso = await buildConfigDrive({ meta_data: { uuid: 'u-1', name: 'h1' }, user_data: '#!/bin/sh\necho hi\n', network_data: { links: [] } });
    expect(isoinfo(iso, '-d')).toMatch(/^Volume id: config-2$/m);
    expect(isoinfo(iso, '-R', '-f').split('\n').filter(Boolean).sort()).toEqual([
      '/openstack',
      '/openstack/latest',
      '/openstack/latest/meta_data.json',
      '/openstack/latest/network_data.json',
      '/openstack/latest/user_data',
    ]);
    expect(JSON.parse(isoinfo(iso, '-R', '-x', '/openstack/latest/meta_data.json'))).toEqual({ uuid: 'u-1', name: 'h1' });
    expect(isoinfo(iso, '-R', '-x', '/openstack/latest/user_data')).toBe('#!/bin/sh\necho hi\n');
    // Without user or network data, only meta_data.json.
    const bare = await buildConfigDrive({ meta_data: { uuid: 'u-2' } });
    expect(isoinfo(bare, '-R', '-f').split('\n').filter(Boolean).sort()).toEqual(['/openstack', '/openstack/latest', '/openstack/latest/meta_data.json']);
  });

  it('stores one drive per host under a name derived from its content, and serves only what it stored', async () => {
    const ref = { namespace: 'ns', name: 'h1' };
    const a = await buildConfigDrive({ meta_data: { v: 1 } });
    const b = await buildConfigDrive({ meta_data: { v: 2 } });
    const first = await store.put(ref, a);
    expect(first).toMatch(/^\/configdrive\/[0-9a-f]{16}-[0-9a-f]{64}\.iso$/);
    expect(await store.put(ref, a)).toBe(first);
    const served = await fetch(`${base}${first}`);
    expect(served.status).toBe(200);
    expect(Buffer.from(await served.arrayBuffer()).equals(a)).toBe(true);
    const second = await store.put(ref, b);
    expect(second).not.toBe(first);
    expect((await fetch(`${base}${first}`)).status).toBe(404);
    expect(readdirSync(join(dir, 'configdrive'))).toEqual([second.split('/').pop()]);
    // Another host's drive with the same content has another name.
    expect(await store.put({ namespace: 'ns', name: 'h2' }, b)).not.toBe(second);
    expect((await fetch(`${base}/configdrive/../configdrive.key`)).status).not.toBe(200);
    expect((await fetch(`${base}/configdrive/configdrive.key`)).status).toBe(404);
    await store.removeHost(ref);
    expect((await fetch(`${base}${second}`)).status).toBe(404);
    // Another store (another key) names the same content differently.
    const otherDir = mkdtempSync(join(tmpdir(), 'mf-cd-other-'));
    try {
      expect(await new ConfigDriveStore(otherDir).put(ref, a)).not.toBe(first);
    } finally {
      rmSync(otherDir, { recursive: true, force: true });
    }
  });
});
