/**
 * The secrets the API stores for hosts, against the real stack: concurrent
 * changes of one host, a deleted host's secrets, a host created again under
 * the same name, and Secrets that are not the host's own.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../api/host-service';
import { randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';

let h: Harness;
const NS = 'secrets';

beforeAll(async () => {
  h = await startHarness();
});

afterAll(async () => {
  await h?.close();
});

const spec = (name: string, mac = randomMac()) => ({
  bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc-secret` },
  bootMACAddress: mac,
  online: true,
});
const settle = <T>(what: string, probe: () => Promise<T | undefined | false>) => waitFor(what, probe, { timeoutMs: 180_000 });
const stateOf = async (name: string) => (await h.hosts.get({ namespace: NS, name })).status.provisioning.state;
const apiError = async (p: Promise<unknown>): Promise<ApiError> => {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  return err as ApiError;
};
const gone = (name: string) =>
  settle('deleted', async () => {
    const err = await h.hosts.get({ namespace: NS, name }).then(
      () => undefined,
      (e: unknown) => e,
    );
    return err instanceof ApiError && err.status === 404;
  });

describe('secrets the API stores for hosts', { timeout: 600_000 }, () => {
  it('concurrent PUTs to one host leave the secrets of the one that was applied', async () => {
    const name = uniq('sec-race');
    const ref = { namespace: NS, name };
    const s = spec(name);
    await h.hosts.put(ref, { spec: s, credentials: { username: 'admin', password: 'pw-0' } });
    await settle('available', async () => (await stateOf(name)) === 'available');

    // A: the same spec with a new password (applied). B: a provisioner change the workflow
    // rejects (409), with another password that must not stay behind, nor bring back the old one.
    const a = h.hosts.put(ref, { spec: s, credentials: { username: 'admin', password: 'pw-a' } });
    const b = h.hosts.put(ref, {
      spec: { ...s, provisioner: 'direct', bmc: { ...s.bmc, address: 'redfish+http://127.0.0.1:9/redfish/v1/Systems/1' } },
      credentials: { username: 'admin', password: 'pw-b' },
    });
    const [ra, rb] = await Promise.allSettled([a, b]);
    expect(ra.status).toBe('fulfilled');
    expect(rb.status === 'rejected' && rb.reason instanceof ApiError && rb.reason.status).toBe(409);
    expect(await h.secrets.read(NS, `${name}-bmc-secret`)).toEqual({ username: 'admin', password: 'pw-a' });

    await h.hosts.remove(ref);
    await gone(name);
  });

  it("removes a deleted host's secrets, and a host created again does not reuse the old password", async () => {
    const name = uniq('sec-del');
    const ref = { namespace: NS, name };
    const s = spec(name);
    await h.hosts.put(ref, { spec: s, credentials: { username: 'admin', password: 'pw-old' }, userData: '#cloud-config\n' });
    await settle('available', async () => (await stateOf(name)) === 'available');
    const files = [`${name}-bmc-secret`, `${name}-user-data`].map((n) => join(h.secretDir, NS, `${n}.secret`));
    expect(files.every((f) => existsSync(f))).toBe(true);

    await h.hosts.remove(ref);
    await gone(name);
    expect(files.filter((f) => existsSync(f))).toEqual([]);

    // Created again without credentials: told to send them, not registered with the old password.
    const err = await apiError(h.hosts.put(ref, { spec: s }));
    expect(err.status).toBe(400);
    expect(err.fields).toEqual([
      { field: 'spec.bmc.credentialsName', reason: `Secret ${NS}/${name}-bmc-secret does not exist; send "credentials" in the request to create it` },
    ]);
  });

  it("refuses to overwrite a Secret that is not the host's own", async () => {
    const owner = uniq('sec-own');
    const other = uniq('sec-other');
    const ownerSecret = `${owner}-bmc-secret`;
    await h.hosts.put({ namespace: NS, name: owner }, { spec: spec(owner), credentials: { username: 'admin', password: 'pw-owner' } });

    // Another host naming the first one's Secret, with credentials: refused, nothing written or started.
    const err = await apiError(
      h.hosts.put({ namespace: NS, name: other }, { spec: { ...spec(other), bmc: { address: `fake://${other}`, credentialsName: ownerSecret } }, credentials: { username: 'x', password: 'pw-stolen' } }),
    );
    expect(err.status).toBe(400);
    expect(err.fields).toEqual([
      {
        field: 'spec.bmc.credentialsName',
        reason: `Secret ${NS}/${ownerSecret} belongs to host ${NS}/${owner}; the API only writes a host's own Secrets: name another one`,
      },
    ]);
    expect(await h.secrets.read(NS, ownerSecret)).toEqual({ username: 'admin', password: 'pw-owner' });
    expect(await h.client.workflow.getHandle(`host/${NS}/${other}`).describe().catch(() => undefined)).toBeUndefined();

    // A Secret an operator stored (no owner) is not overwritten either; naming it without credentials is fine.
    const shared = uniq('operator-secret');
    await h.secrets.write(NS, shared, { username: 'root', password: 'pw-operator' });
    const userData = await apiError(
      h.hosts.put({ namespace: NS, name: other }, { spec: { ...spec(other), userData: { name: shared } }, credentials: { username: 'a', password: 'b' }, userData: 'x' }),
    );
    expect(userData.fields.map((f) => f.field)).toEqual(['spec.userData.name']);
    expect(await h.secrets.read(NS, shared)).toEqual({ username: 'root', password: 'pw-operator' });
    const uses = await h.hosts.put({ namespace: NS, name: other }, { spec: { ...spec(other), bmc: { address: `fake://${other}`, credentialsName: shared } } });
    expect(uses.created).toBe(true);

    for (const name of [owner, other]) await h.hosts.remove({ namespace: NS, name });
    for (const name of [owner, other]) await gone(name);
    // Deleting the host that only named the operator's Secret leaves it.
    expect(await h.secrets.read(NS, shared)).toEqual({ username: 'root', password: 'pw-operator' });
  });
});
