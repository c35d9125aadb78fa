/**
 * The `direct` provisioner (no Ironic) through the host workflow on the real
 * Temporal server, against real BMCs: sushy-tools' Redfish emulator of the
 * test stack (system mf-bm-05, virtual media downloads a real ISO served on
 * 127.0.0.1) and OpenIPMI's ipmi_sim with the chassis-control script of
 * test/bmc. What the BMCs show is read from them directly, not from our view.
 * The power test puts a recording proxy between the worker and sushy-tools: a
 * Reset whose answer is lost reaches the BMC once.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../api/host-service';
import type { HostRef, HostSpec } from '../../model/host';
import { ironicNodeName } from '../../model/host-ref';
import type { HostView } from '../../contracts/host';
import { startHarness, uniq, waitFor, type Harness } from '../support/harness';
import { SUSHY_URL } from '../support/env';
import { resetRedfishSystem } from '../support/redfish-system';
import { sushyState as readSushy, type SushyState } from '../support/sushy-state';
import { serveFiles, tinyIso, type FileServer } from '../../bench/support/bmc-files';
import { IPMI_PASSWORD, IPMI_USER, startIpmiSim, type IpmiSim } from '../bmc/support/ipmi-sim';
import { IronicProxy, reachedPeer, type RecordedRequest } from '../../bench/support/ironic-proxy';

const NS = 'direct';
const SYSTEM = '/redfish/v1/Systems/6d660000-0000-4000-8000-000000000005';
const REDFISH_ADDRESS = `redfish-virtualmedia+${SUSHY_URL}${SYSTEM}`;
const IPMI_PORT = 22633;

let h: Harness;
let iso: FileServer;
/** Served by `iso`, read at request time: a test can make an ISO appear. */
const isoFiles: Record<string, Buffer> = {};
let sim: IpmiSim;

/** What sushy itself reports: power, boot override, and the CD slot of the system's virtual media. */
const sushyState = (): Promise<SushyState> => readSushy(SUSHY_URL, SYSTEM);

const view = (name: string): Promise<HostView> => h.hosts.get({ namespace: NS, name });

const waitState = (name: string, state: string, timeoutMs = 90_000) =>
  waitFor(`${name} to reach ${state}`, async () => {
    const v = await view(name);
    return v.status.provisioning.state === state && !v.currentOperation ? v : undefined;
  }, { timeoutMs });

const waitGone = (ref: HostRef) =>
  waitFor(`${ref.name} to be gone`, async () => {
    try {
      await h.hosts.get(ref);
      return undefined;
    } catch (err) {
      return err instanceof ApiError && err.status === 404 ? true : undefined;
    }
  }, { timeoutMs: 90_000 });

async function rejection(p: Promise<unknown>): Promise<ApiError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error('expected the request to be rejected');
}

beforeAll(async () => {
  h = await startHarness();
  isoFiles['live.iso'] = tinyIso();
  iso = await serveFiles(isoFiles);
  sim = await startIpmiSim(IPMI_PORT);
  // Setup through our client; assertions read sushy.
  await resetRedfishSystem(REDFISH_ADDRESS);
});

afterAll(async () => {
  await sim?.stop();
  await iso?.close();
  await h?.close();
});

describe('direct provisioner, Redfish (sushy-tools) through the host workflow', () => {
  it('create → available (out-of-band hardware) → live ISO provisioned → image removed → available → deleted, never touching Ironic', async () => {
    const name = uniq('rf');
    const ref = { namespace: NS, name };
    const spec: HostSpec = {
      bmc: { address: REDFISH_ADDRESS, credentialsName: `${name}-bmc` },
      online: true,
      provisioner: 'direct',
    };
    await h.hosts.put(ref, { spec, credentials: { username: 'admin', password: 'password' } });

    const available = await waitFor('available and powered on', async () => {
      const v = await view(name);
      return v.status.provisioning.state === 'available' && v.status.poweredOn && !v.currentOperation ? v : undefined;
    }, { timeoutMs: 90_000 });
    expect(available.status.operationalStatus).toBe('OK');
    expect(available.status.provisioning.ID).toBe('');
    expect(available.status.hardware?.cpu?.count).toBe(16);
    expect(available.status.hardware?.ramMebibytes).toBe(32768);
    expect(available.status.hardware?.nics?.map((n) => n.mac)).toEqual(['52:54:00:6d:66:51', '52:54:00:6d:66:52']);
    expect(available.operations.map((o) => `${o.kind}:${o.outcome}`)).toEqual([
      'enroll:succeeded',
      'inspect:succeeded',
      'prepare:succeeded',
      'power:succeeded',
    ]);
    expect(await sushyState()).toMatchObject({ power: 'On', bootTarget: 'Hdd', inserted: false });

    const url = iso.url('live.iso');
    const before = iso.hits('/live.iso');
    await h.hosts.setImage(ref, { url, format: 'live-iso' });
    const provisioned = await waitState(name, 'provisioned');
    expect(provisioned.status.operationalStatus).toBe('OK');
    expect(provisioned.status.poweredOn).toBe(true);
    expect(provisioned.status.provisioning.image?.url).toBe(url);
    expect(iso.hits('/live.iso')).toBeGreaterThan(before); // sushy fetched the ISO
    expect(await sushyState()).toEqual({ power: 'On', bootTarget: 'Cd', bootMode: 'UEFI', inserted: true, image: url });

    // Removing the image deprovisions; online false keeps it off afterwards.
    await h.hosts.put(ref, { spec: { ...spec, online: false } });
    const deprovisioned = await waitState(name, 'available');
    expect(deprovisioned.status.poweredOn).toBe(false);
    expect(deprovisioned.status.provisioning.image).toBeUndefined();
    expect(deprovisioned.operations.at(-1)).toMatchObject({ kind: 'deprovision', outcome: 'succeeded' });
    expect(await sushyState()).toMatchObject({ power: 'Off', inserted: false, image: null });

    await h.hosts.remove(ref);
    await waitGone(ref);
    expect(await sushyState()).toMatchObject({ power: 'Off', inserted: false });
    // No Ironic node was ever made for it.
    expect(await h.ironic.getNode(ironicNodeName(ref))).toBeUndefined();
  });

  it('records an ISO the BMC cannot fetch as a provisioning error; recovers when the ISO appears, or when the image is removed', async () => {
    const name = uniq('rf-err');
    const ref = { namespace: NS, name };
    const spec: HostSpec = { bmc: { address: REDFISH_ADDRESS, credentialsName: `${name}-bmc` }, online: true, provisioner: 'direct' };
    await h.hosts.put(ref, { spec, credentials: { username: 'admin', password: 'password' } });
    await waitState(name, 'available');
    const provisioningError = () =>
      waitFor('a provisioning error', async () => {
        const v = await view(name);
        return v.status.errorType === 'provisioning error' ? v : undefined;
      }, { timeoutMs: 90_000 });

    // Removed while failing: the host goes back to available (through deprovisioning), error cleared.
    await h.hosts.setImage(ref, { url: iso.url('missing.iso'), format: 'live-iso' });
    const failed = await provisioningError();
    expect(failed.status.provisioning.state).toBe('provisioning');
    expect(failed.status.operationalStatus).toBe('error');
    expect(failed.status.errorMessage).toMatch(/InsertMedia.*404/);
    expect((await sushyState()).inserted).toBe(false);
    await h.hosts.setImage(ref, null);
    const back = await waitFor('available again, on', async () => {
      const v = await view(name);
      return v.status.provisioning.state === 'available' && v.status.poweredOn && !v.currentOperation ? v : undefined;
    }, { timeoutMs: 90_000 });
    expect(back.status.operationalStatus).toBe('OK');
    expect(back.operations.map((o) => o.kind).slice(-3)).toEqual(['provision', 'deprovision', 'power']);

    // The cause fixed (the ISO appears on the server): the next retry provisions it.
    await h.hosts.setImage(ref, { url: iso.url('late.iso'), format: 'live-iso' });
    await provisioningError();
    isoFiles['late.iso'] = isoFiles['live.iso']!;
    const provisioned = await waitState(name, 'provisioned');
    expect(provisioned.status.operationalStatus).toBe('OK');
    expect(provisioned.status.errorCount).toBe(0);
    expect(await sushyState()).toMatchObject({ power: 'On', bootTarget: 'Cd', inserted: true, image: iso.url('late.iso') });
    await h.hosts.remove(ref);
    await waitGone(ref);
    expect(await sushyState()).toMatchObject({ power: 'Off', inserted: false });
  });

  it('reads a checksummed ISO whole before the BMC gets it: a mismatch is a provisioning error and nothing is inserted', async () => {
    const name = uniq('rf-sum');
    const ref = { namespace: NS, name };
    const spec: HostSpec = { bmc: { address: REDFISH_ADDRESS, credentialsName: `${name}-bmc` }, online: true, provisioner: 'direct' };
    await h.hosts.put(ref, { spec, credentials: { username: 'admin', password: 'password' } });
    await waitState(name, 'available');
    const body = isoFiles['live.iso']!;
    const good = createHash('sha256').update(body).digest('hex');
    const wrong = createHash('sha256').update('another ISO').digest('hex');
    isoFiles['sum.iso'] = body;
    const before = iso.hits('/sum.iso');
    await h.hosts.setImage(ref, { url: `${iso.url('sum.iso')}?sig=s3cr3t`, format: 'live-iso', checksum: wrong, checksumType: 'sha256' });
    const failed = await waitFor('a provisioning error', async () => {
      const v = await view(name);
      return v.status.errorType === 'provisioning error' ? v : undefined;
    }, { timeoutMs: 90_000 });
    expect(failed.status.errorMessage).toContain(`does not match its checksum: sha256 expected ${wrong}, got ${good}`);
    expect(failed.status.errorMessage).not.toContain('s3cr3t');
    // Read by the worker, not by the BMC: nothing was inserted.
    expect(iso.hits('/sum.iso')).toBeGreaterThan(before);
    expect((await sushyState()).inserted).toBe(false);
    // The right checksum: verified, then inserted and booted.
    await h.hosts.setImage(ref, { url: `${iso.url('sum.iso')}?sig=s3cr3t`, format: 'live-iso', checksum: good, checksumType: 'sha256' });
    const provisioned = await waitState(name, 'provisioned');
    expect(provisioned.status.operationalStatus).toBe('OK');
    expect(await sushyState()).toMatchObject({ inserted: true, image: `${iso.url('sum.iso')}?sig=s3cr3t` });
    await h.hosts.remove(ref);
    await waitGone(ref);
  });

  it('rejects what direct cannot do, naming the field: a fake:// BMC, a qcow2 image, and switching provisioner', async () => {
    const name = uniq('rf-bad');
    const ref = { namespace: NS, name };
    const fake = await rejection(
      h.hosts.put(ref, {
        spec: { bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc` }, bootMACAddress: '52:54:00:aa:bb:01', online: true, provisioner: 'direct' },
        credentials: { username: 'a', password: 'b' },
      }),
    );
    expect(fake.status).toBe(400);
    expect(fake.fields.map((f) => f.field)).toEqual(['spec.provisioner']);
    expect(fake.message).toMatch(/Redfish address .* or an IPMI address/);

    const spec: HostSpec = { bmc: { address: REDFISH_ADDRESS, credentialsName: `${name}-bmc` }, online: false, provisioner: 'direct' };
    const qcow2 = await rejection(
      h.hosts.put(ref, {
        spec: { ...spec, image: { url: 'http://127.0.0.1/disk.qcow2', checksum: 'a'.repeat(64), format: 'qcow2' } },
        credentials: { username: 'admin', password: 'password' },
      }),
    );
    expect(qcow2.status).toBe(400);
    expect(qcow2.fields).toEqual([{ field: 'spec.image.format', reason: expect.stringMatching(/only format "live-iso"/) }]);
    // Nothing was created by the rejected requests.
    await expect(h.hosts.get(ref)).rejects.toMatchObject({ status: 404 });

    await h.hosts.put(ref, { spec, credentials: { username: 'admin', password: 'password' } });
    await waitState(name, 'available');
    const viaImage = await rejection(h.hosts.setImage(ref, { url: 'http://127.0.0.1/disk.raw', checksum: 'b'.repeat(64), format: 'raw' }));
    expect(viaImage.fields.map((f) => f.field)).toEqual(['spec.image.format']);
    const { provisioner: _p, ...ironicSpec } = spec;
    const switched = await rejection(h.hosts.put(ref, { spec: ironicSpec }));
    expect(switched.status).toBe(409);
    expect(switched.message).toMatch(/spec\.provisioner cannot change from direct to ironic/);
    const still = await view(name);
    expect(still.spec?.provisioner).toBe('direct');
    expect(still.spec?.image).toBeUndefined();
    await h.hosts.remove(ref);
    await waitGone(ref);
  });
});

describe('direct provisioner, a BMC power request whose answer is lost (sushy-tools behind a proxy)', { timeout: 300_000 }, () => {
  let bmcProxy: IronicProxy;
  beforeAll(async () => {
    bmcProxy = new IronicProxy(SUSHY_URL);
    await bmcProxy.start();
    await resetRedfishSystem(REDFISH_ADDRESS);
  });
  afterAll(() => bmcProxy?.stop());

  const isReset = (r: RecordedRequest) => r.method === 'POST' && r.path === `${SYSTEM}/Actions/ComputerSystem.Reset`;
  const resetType = (r: RecordedRequest) => (JSON.parse(r.body) as { ResetType: string }).ResetType;

  /**
   * The next Reset: left unanswered (its connection closed after 100 ms) and handed to sushy only once the worker
   * has read the system again and got its answer (sushy then carries it out 1 to 11 s later), as a BMC that acts on
   * a request after the client gave up on it. Resolves once sushy has been handed it.
   */
  function lateReset(): Promise<RecordedRequest> {
    let caught: Promise<RecordedRequest> | undefined;
    bmcProxy.interceptor = (r) => {
      if (!isReset(r)) return undefined;
      bmcProxy.interceptor = undefined;
      const forwardWhen = new Promise<void>((release) => {
        bmcProxy.onceAnswered((g) => g.method === 'GET' && g.path === SYSTEM, release);
        setTimeout(release, 20_000).unref();
      });
      caught = forwardWhen.then(() => r);
      return { kind: 'no-answer', ms: 100, forward: true, forwardWhen };
    };
    return waitFor('a Reset through the proxy', async () => caught, { timeoutMs: 60_000, intervalMs: 100 });
  }

  it('online false, then true: each Reset reaches the BMC once, the host ends where asked, both power operations succeed', async () => {
    const name = uniq('rf-once');
    const ref = { namespace: NS, name };
    const spec: HostSpec = { bmc: { address: `redfish+${bmcProxy.url}${SYSTEM}`, credentialsName: `${name}-bmc` }, online: true, provisioner: 'direct' };
    await h.hosts.put(ref, { spec, credentials: { username: 'admin', password: 'password' } });
    await waitFor('available and on', async () => {
      const v = await view(name);
      return v.status.provisioning.state === 'available' && v.status.poweredOn && !v.currentOperation ? v : undefined;
    }, { timeoutMs: 90_000 });
    const mark = bmcProxy.requests.length;
    const resets = () => bmcProxy.requests.slice(mark).filter(isReset).filter(reachedPeer).map(resetType);
    const idle = (what: string, on: boolean) =>
      waitFor(what, async () => {
        const v = await view(name);
        return !v.currentOperation && v.status.poweredOn === on ? v : undefined;
      }, { timeoutMs: 120_000 });

    let late = lateReset();
    await h.hosts.put(ref, { spec: { ...spec, online: false } });
    expect((await late).injected).toBe('no answer, forwarded');
    await idle('off', false);
    expect((await sushyState()).power).toBe('Off');
    // online false is a soft power off (as Metal3): the lost GracefulShutdown landed, nothing sent after it.
    expect(resets()).toEqual(['GracefulShutdown']);

    late = lateReset();
    await h.hosts.put(ref, { spec });
    await late;
    const on = await idle('on', true);
    expect((await sushyState()).power).toBe('On');
    expect(resets()).toEqual(['GracefulShutdown', 'On']);
    expect(on.operations.filter((o) => o.kind === 'power').slice(-2).map((o) => o.outcome)).toEqual(['succeeded', 'succeeded']);
    expect(on.status.errorCount).toBe(0);

    await h.hosts.remove(ref);
    await waitGone(ref);
  });
});

describe('direct provisioner, IPMI (ipmi_sim) through the host workflow', () => {
  it('enrolls without inventory (said in the record), power follows spec.online, an image is refused, delete powers off', async () => {
    const name = uniq('ipmi');
    const ref = { namespace: NS, name };
    const spec: HostSpec = {
      bmc: { address: `ipmi://127.0.0.1:${IPMI_PORT}`, credentialsName: `${name}-bmc` },
      online: true,
      provisioner: 'direct',
    };
    sim.setPowerFile('0');
    sim.clearCalls();
    await h.hosts.put(ref, { spec, credentials: { username: IPMI_USER, password: IPMI_PASSWORD } });
    const on = await waitFor('available and on', async () => {
      const v = await view(name);
      return v.status.provisioning.state === 'available' && v.status.poweredOn && !v.currentOperation ? v : undefined;
    }, { timeoutMs: 90_000 });
    expect(sim.file('power')).toBe('1');
    expect(on.status.provisioning.ID).toBe('');
    expect(on.status.hardware).toBeUndefined();
    const inspect = on.operations.find((o) => o.kind === 'inspect');
    expect(inspect).toMatchObject({ outcome: 'succeeded', note: expect.stringMatching(/IPMI BMC has no out-of-band inventory/) });
    expect(sim.calls().filter((c) => c.startsWith('set power')).length).toBe(1);

    await h.hosts.put(ref, { spec: { ...spec, online: false } });
    await waitFor('off', async () => (await view(name)).status.poweredOn === false && sim.file('power') === '0');
    await h.hosts.put(ref, { spec });
    await waitFor('on again', async () => (await view(name)).status.poweredOn === true && sim.file('power') === '1');
    // online: false is a soft power off, as in Metal3 (patch soft-power-off): an ACPI shutdown request, no hard `power 0`.
    const sets = sim.calls().filter((c) => c.startsWith('set power') || c.startsWith('set shutdown'));
    expect(sets).toEqual(['set power 1', 'set shutdown 1', 'set power 1']);

    const image = await rejection(h.hosts.setImage(ref, { url: 'http://127.0.0.1/live.iso', format: 'live-iso' }));
    expect(image.status).toBe(400);
    expect(image.fields).toEqual([{ field: 'spec.image', reason: expect.stringMatching(/IPMI BMC .* does not have/) }]);

    await h.hosts.remove(ref);
    await waitGone(ref);
    expect(sim.file('power')).toBe('0');
    expect(await h.ironic.getNode(ironicNodeName(ref))).toBeUndefined();
  });

  it('records a wrong IPMI password as a registration error naming the cause', async () => {
    const name = uniq('ipmi-pw');
    const ref = { namespace: NS, name };
    const password = `wrong-${uniq('pw')}`;
    await h.hosts.put(ref, {
      spec: { bmc: { address: `ipmi://127.0.0.1:${IPMI_PORT}`, credentialsName: `${name}-bmc` }, online: false, provisioner: 'direct' },
      credentials: { username: IPMI_USER, password },
    });
    const failed = await waitFor('a registration error', async () => {
      const v = await view(name);
      return v.status.errorType === 'registration error' ? v : undefined;
    });
    expect(failed.status.errorMessage).toMatch(/credentials|password|RAKP|authori/i);
    expect(failed.status.errorMessage).not.toContain(password);
    await h.hosts.remove(ref);
    await waitGone(ref);
  });
});
