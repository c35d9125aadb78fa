/**
 * Taking over a fleet exactly as Metal3's baremetal-operator (BMO) left it,
 * from the snapshot in test/fixtures/bmo-takeover/ (captured from a real BMO
 * at 02aa5059e348; see its README). The BareMetalHosts (spec, status as BMO
 * wrote it: nulls, `image: {url: ""}`, finalizers) go into the real API
 * server, the nodes into the real Ironic with BMO's own fields (interfaces,
 * instance_info, driver_info's shape), their provision states reached
 * through Ironic's verbs (`adopt` for the active ones). Then the guide: the
 * controller and worker start. Counted at a recording proxy in front of the
 * worker's Ironic: no provision, clean, deploy, power or boot-device request.
 *
 * One host of each kind the snapshot has: h-00 and h-01 provisioned (h-00
 * then deprovisioned), h-04 provisioned and powered off with online false,
 * h-05 and h-06 available (h-05 then provisioned), h-09 available with an
 * image and online false, and a Redfish host (rf-0), on a system of this
 * file's own sushy-tools (no other file changes its power under it). The
 * heavy tier (`npm run test:heavy`) takes over all twelve: the others are
 * copies of these kinds (h-02, h-03 of h-01; h-07, h-08 of h-06; rf-1 of
 * rf-0), and each Redfish node costs Ironic PBKDF2-hashed sessions at every
 * power sync while it lives.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IronicClient } from '../../clients/ironic/client';
import type { IronicNode } from '../../clients/ironic/types';
import { hostWorkflowId } from '../../model/host-ref';
import { withoutNulls } from '../../model/metal3-status';
import { hostViewQuery, type HostView } from '../../contracts/host';
import { IRONIC_URL } from '../support/env';
import { HEAVY } from '../support/heavy';
import { unusedPort } from '../support/ports';
import { ownSushy, SUSHY_SYSTEMS } from '../bmc/support/sushy';
import { randomMac, uniq, waitFor } from '../support/harness';
import { startProxyProcess } from '../support/ironic-proxy-process';
import { kubectl } from './kube-harness';
import { bmoFleet, bmoHost, bmoLease, bmoNode, drives, type Bmh } from './bmo-fleet';
import { useShimSuite } from './shim-harness';

const ALL_HOSTS = ['h-00', 'h-01', 'h-02', 'h-03', 'h-04', 'h-05', 'h-06', 'h-07', 'h-08', 'h-09', 'rf-0', 'rf-1'] as const;
type Name = (typeof ALL_HOSTS)[number];
const HOSTS: readonly Name[] = HEAVY ? ALL_HOSTS : ['h-00', 'h-01', 'h-04', 'h-05', 'h-06', 'h-09', 'rf-0'];
/** Fake systems of this file's sushy-tools for the Redfish hosts (the snapshot's sushy ran elsewhere). */
const RF_SYSTEMS: Partial<Record<Name, string>> = { 'rf-0': SUSHY_SYSTEMS.bm01, 'rf-1': SUSHY_SYSTEMS.bm02 };
const rfSystem = (name: Name): string => {
  const system = RF_SYSTEMS[name];
  if (!system) throw new Error(`${name}: no sushy-tools system for it`);
  return system;
};


const NS = uniq('mf-bmo');
let proxy: Awaited<ReturnType<typeof startProxyProcess>> | undefined;
let sushy: ReturnType<typeof ownSushy> | undefined;
beforeAll(async () => {
  proxy = await startProxyProcess(IRONIC_URL, join(mkdtempSync(join(tmpdir(), 'mf-bmo-')), 'ironic-requests.jsonl'));
  sushy = ownSushy('bmo-takeover-sushy', await unusedPort());
  sushy.start();
});
afterAll(() => {
  proxy?.stop();
  sushy?.stop();
  // A controller with the default settings reads BMO's Lease in every namespace: none may outlive this file.
  kubectl(['delete', 'lease', 'baremetal-operator', '-n', NS, '--ignore-not-found'], { check: false });
  // BMO's finalizers on the Secrets and HardwareData: nothing deletes these hosts here.
  fleet.releaseFinalizers();
});
const suite = useShimSuite(NS, uniq('tq-bmo'), {}, () => ({ IRONIC_URL: proxy!.url }));
const ironic = new IronicClient({ url: IRONIC_URL });
const fleet = bmoFleet({ ns: NS, ironic, redfish: (name) => ({ url: sushy!.url, system: rfSystem(name as Name) }) });

const json = <T>(args: string[]): T => JSON.parse(kubectl([...args, '-o', 'json']).stdout) as T;
const getHost = (name: Name): Bmh => fleet.getHost(name);
const eventsOf = (name: string): { reason: string; message: string; type: string }[] =>
  json<{ items: { reason: string; message: string; type: string }[] }>(['get', 'events', '-n', NS, '--field-selector', `involvedObject.name=${name}`]).items;
const view = (name: Name): Promise<HostView | undefined> =>
  suite.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name })).query(hostViewQuery).catch(() => undefined);


const loaded = new Map<Name, { before: Bmh; node: IronicNode }>();
let mark = 0;

describe("a fleet as Metal3's operator left it, taken over", { timeout: 900_000 }, () => {
  beforeAll(async () => {
    // BMO stopped, metalflow not yet up.
    suite.shim.running('controller')?.kill('SIGKILL');
    // Ironic's verbs for the nodes at once; the objects one after another (kubectl blocks).
    const macs = new Map(HOSTS.map((name) => [name, randomMac()] as const));
    const nodes = new Map(await Promise.all(HOSTS.map(async (name) => [name, await fleet.recreateNode(name, bmoNode(name), macs.get(name)!)] as const)));
    for (const name of HOSTS) {
      const mac = macs.get(name)!;
      const node = nodes.get(name)!;
      const version = fleet.loadSecrets(bmoHost(name));
      const before = fleet.loadHost(bmoHost(name), node.uuid, mac, version);
      fleet.loadHardwareData(name, name, before.metadata.uid!);
      loaded.set(name, { before, node });
    }
    // BMO still leads: a fresh Lease of its name.
    kubectl(['create', '-f', '-'], { input: JSON.stringify(bmoLease(NS, 'bmo-7c9d_5f1e')) });
    mark = proxy!.requests().length;
    suite.shim.startController();
  }, 900_000);

  it("accepts every status BMO wrote (image.url \"\", null timestamps read back as absent)", () => {
    for (const name of HOSTS) {
      const stored = getHost(name);
      const bmo = bmoHost(name);
      expect(stored.status.provisioning.image).toEqual(bmo.status.provisioning.image);
      expect(stored.status.operationHistory).toEqual(withoutNulls(bmo.status.operationHistory));
      expect(stored.status.hardware).toEqual(bmo.status.hardware);
    }
    expect(getHost('h-05').status.provisioning.image).toEqual({ url: '' });
  });

  it("refuses to drive any host while BMO's Lease is held and fresh, with a Warning Event", async () => {
    for (const name of HOSTS) {
      await waitFor(`${name}: BareMetalOperatorActive`, async () => eventsOf(name).some((e) => e.reason === 'BareMetalOperatorActive') || undefined, { timeoutMs: 120_000 });
      const e = eventsOf(name).find((x) => x.reason === 'BareMetalOperatorActive')!;
      expect(e.type).toBe('Warning');
      expect(e.message).toMatch(new RegExp(`holds its leader Lease ${NS}/baremetal-operator \\(holder bmo-7c9d_5f1e`));
      expect(e.message).toMatch(/METALFLOW_BMO_CHECK=off/);
      expect(await view(name)).toBeUndefined();
    }
    expect(proxy!.requests().slice(mark).filter((r) => r.method !== 'GET')).toEqual([]);
  });

  it('adopts every host as it is: no provision, clean, deploy, power or boot-device request; STATE, ONLINE, hardware and history kept', async () => {
    // BMO stopped cleanly: it releases its Lease (LeaderElectionReleaseOnCancel).
    kubectl(['patch', 'lease', 'baremetal-operator', '-n', NS, '--type=merge', '-p', JSON.stringify({ spec: { holderIdentity: '', leaseDurationSeconds: 1 } })]);
    const views = new Map<Name, HostView>();
    for (const name of HOSTS) {
      views.set(name, await waitFor(`${name} adopted`, async () => {
        const v = await view(name);
        return v && v.operations.some((o) => o.kind === 'enroll' && o.outcome === 'succeeded') && !v.currentOperation ? v : undefined;
      }, { timeoutMs: 300_000 }));
      await waitFor(`${name}: WorkflowReadopted`, async () => eventsOf(name).some((e) => e.reason === 'WorkflowReadopted') || undefined, { timeoutMs: 60_000 });
    }
    const driven = proxy!.requests().slice(mark).filter(drives);
    expect(driven.map((r) => `${r.method} ${r.path} ${r.body}`)).toEqual([]);

    for (const name of HOSTS) {
      const { before, node } = loaded.get(name)!;
      const v = views.get(name)!;
      expect(v.operations.map((o) => o.kind), name).toEqual(['enroll']);
      expect(v.status.provisioning, name).toMatchObject({ state: before.status.provisioning.state, ID: node.uuid });
      expect(v.status.operationalStatus, name).toBe('OK');
      // What the workflow holds (and publishes) keeps BMO's record.
      expect(v.status.poweredOn, name).toBe(before.status.poweredOn);
      expect(v.status.hardware, name).toEqual(before.status.hardware);
      expect(v.status.operationHistory, name).toEqual(withoutNulls(before.status.operationHistory));
      // What kubectl get bmh shows.
      const after = getHost(name);
      expect(after.status.provisioning.state, name).toBe(before.status.provisioning.state);
      expect(after.spec.online, name).toBe(before.spec.online);
      expect(after.status.poweredOn, name).toBe(before.status.poweredOn);
      expect(after.status.hardware, name).toEqual(before.status.hardware);
      expect(after.status.operationHistory, name).toEqual(withoutNulls(before.status.operationHistory));
      const n = await ironic.getNode(node.uuid);
      expect(n, name).toMatchObject({ provision_state: node.provision_state, power_state: node.power_state, extra: { metalflow_host: `${NS}/${name}` } });
      if (node.provision_state === 'active') expect(n!.inspect_interface, `${name}: BMO's interface kept on the active node`).toBe(node.inspect_interface);
    }
  });

  it('then drives them: h-09 stays available while online is false, a provisioned host deprovisions, an available one provisions', async () => {
    const image = bmoHost('h-00').spec.image;
    kubectl(['patch', 'bmh', 'h-00', '-n', NS, '--type=json', '-p', JSON.stringify([{ op: 'remove', path: '/spec/image' }])]);
    kubectl(['patch', 'bmh', 'h-05', '-n', NS, '--type=merge', '-p', JSON.stringify({ spec: { image } })]);
    const until = (name: Name, state: string) =>
      waitFor(`${name} ${state}`, async () => {
        const v = await view(name);
        return v?.status.provisioning.state === state && !v.currentOperation ? v : undefined;
      }, { timeoutMs: 400_000 });
    const deprovisioned = await until('h-00', 'available');
    expect(deprovisioned.operations.map((o) => `${o.kind}:${o.outcome}`)).toEqual(['enroll:succeeded', 'deprovision:succeeded']);
    const provisioned = await until('h-05', 'provisioned');
    expect(provisioned.operations.map((o) => `${o.kind}:${o.outcome}`)).toEqual(['enroll:succeeded', 'provision:succeeded']);
    expect((await ironic.getNode(loaded.get('h-05')!.node.uuid))?.provision_state).toBe('active');

    // h-09: image set, online false; a spec change makes its workflow decide again, and it still waits.
    kubectl(['patch', 'bmh', 'h-09', '-n', NS, '--type=merge', '-p', JSON.stringify({ spec: { description: 'held off' } })]);
    const h09 = await waitFor('h-09 took the new spec', async () => {
      const v = await view('h-09');
      return v?.spec?.description === 'held off' && !v.currentOperation ? v : undefined;
    }, { timeoutMs: 120_000 });
    expect(h09.status.provisioning.state).toBe('available');
    expect(h09.operations.map((o) => o.kind)).toEqual(['enroll']);
    const h09Node = loaded.get('h-09')!.node.uuid;
    expect(proxy!.requests().filter((r) => drives(r) && r.path.includes(h09Node))).toEqual([]);
    expect(getHost('h-09').status.provisioning.state).toBe('available');

    // Wanted on, it provisions with the image BMO held it with.
    kubectl(['patch', 'bmh', 'h-09', '-n', NS, '--type=merge', '-p', JSON.stringify({ spec: { online: true } })]);
    const h09On = await until('h-09', 'provisioned');
    expect(h09On.operations.map((o) => `${o.kind}:${o.outcome}`)).toEqual(['enroll:succeeded', 'provision:succeeded']);
    expect((await ironic.getNode(h09Node))?.provision_state).toBe('active');
  });
});
