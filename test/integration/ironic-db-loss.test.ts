/**
 * Ironic restarted with an empty database (issue 10 / issue 16 item 2): as a
 * Metal3 Ironic pod on ephemeral SQLite, every node is gone. Hosts in mixed
 * states (available on and off, provisioned, one mid-provisioning, one asked
 * for a reboot and one for a power off right after) each register again and
 * end in the state they were in: provisioned hosts adopted with their image
 * (deploys counted at the fault proxy: none after the restart), no
 * inspection, no error held against any host, the operations in flight done.
 * On an Ironic of this file's own (scripts/stack.sh restart ironic --empty-db).
 */
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IronicNode } from '../../clients/ironic/types';
import type { HostRef, HostSpec, Image } from '../../types/host';
import { hostWorkflowId, ironicNodeName } from '../../types/host-ref';
import { hostViewQuery, type HostView } from '../../workflows/definitions';
import { FAST_HOST_OPTIONS, randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';
import { IronicProxy, isDeploy, type RecordedRequest } from '../support/ironic-proxy';
import { ownIronic, type OwnIronic } from '../support/own-ironic';
import { unusedPort } from '../support/ports';

const NS = 'db-loss';
/** Served on loopback: Ironic's agent deploy (the stuck one below) checks the image URL before it waits. */
const body = Buffer.from('metalflow db-loss image');
const images = createServer((req, res) => {
  res.writeHead(200, { 'content-length': body.length });
  res.end(req.method === 'HEAD' ? undefined : body);
});
let IMAGE: Image;

let ironic: OwnIronic;
let proxy: IronicProxy;
let h: Harness;

beforeAll(async () => {
  await new Promise<void>((resolve) => images.listen(0, '127.0.0.1', resolve));
  const { port } = images.address() as AddressInfo;
  IMAGE = { url: `http://127.0.0.1:${port}/db-loss.qcow2`, checksum: createHash('sha256').update(body).digest('hex'), checksumType: 'sha256', format: 'qcow2' };
  ironic = ownIronic('ironic-db-loss', await unusedPort());
  await ironic.start();
  proxy = new IronicProxy(ironic.url);
  await proxy.start();
  h = await startHarness({ ironicUrl: proxy.url, hostOptions: { ...FAST_HOST_OPTIONS, powerCheckSeconds: 2 } });
}, 180_000);

afterAll(async () => {
  await h?.close();
  await proxy?.stop();
  await ironic?.stop();
  images.close();
});

const view = (ref: HostRef): Promise<HostView> => h.client.workflow.getHandle(hostWorkflowId(ref)).query(hostViewQuery);
const idle = (ref: HostRef, state: string, more: (v: HostView) => boolean = () => true) =>
  waitFor(`${ref.name} ${state}`, async () => {
    const v = await view(ref);
    return v.status.provisioning.state === state && !v.currentOperation && more(v) ? v : undefined;
  }, { timeoutMs: 240_000, intervalMs: 500 });

async function host(name: string, online: boolean): Promise<HostRef> {
  const ref = { namespace: NS, name: uniq(name) };
  const spec: HostSpec = { bmc: { address: `fake://${ref.name}`, credentialsName: `${ref.name}-bmc` }, bootMACAddress: randomMac(), online, automatedCleaningMode: 'disabled' };
  await h.hosts.put(ref, { spec, credentials: { username: 'admin', password: 'pw' } });
  return ref;
}

const verb = (r: RecordedRequest, target: string): boolean =>
  r.method === 'PUT' && /\/states\/provision$/.test(r.path) && new RegExp(`"target":\\s*"${target}"`).test(r.body);
const onNodes = (ids: string[]) => (r: RecordedRequest): boolean => ids.some((id) => r.path.includes(`/nodes/${id}/`));

describe('Ironic restarted with an empty database', () => {
  it('every host registers again and ends where it was; provisioned hosts are adopted, never deployed again', async () => {
    const refs = {
      availableOn: await host('avail-on', true),
      availableOff: await host('avail-off', false),
      provisioned: await host('prov', true),
      rebooted: await host('prov-reboot', true),
      heldOff: await host('prov-held', true),
      midDeploy: await host('mid', true),
    };
    const all = Object.values(refs);
    for (const ref of all) await idle(ref, 'available');
    for (const ref of [refs.provisioned, refs.rebooted, refs.heldOff]) await h.hosts.setImage(ref, IMAGE);
    for (const ref of [refs.provisioned, refs.rebooted, refs.heldOff]) await idle(ref, 'provisioned', (v) => v.status.poweredOn);
    // A deploy that waits for an agent that never calls (as host-interrupt.test.ts): mid-provisioning when Ironic restarts.
    const midNode = (await view(refs.midDeploy)).status.provisioning.ID;
    await h.ironic.patchNode(midNode, [{ op: 'replace', path: '/deploy_interface', value: 'direct' }]);
    await h.hosts.setImage(refs.midDeploy, IMAGE);
    await waitFor('deploy waiting for its agent', async () => (await h.ironic.getNode(midNode))?.provision_state === 'wait call-back', { timeoutMs: 60_000 });

    const before = new Map<HostRef, HostView>();
    for (const ref of all) before.set(ref, await view(ref));
    const oldIds = new Map(all.map((ref) => [ref, before.get(ref)!.status.provisioning.ID]));

    await ironic.restartEmpty();
    const mark = proxy.requests.length;
    for (const ref of all) expect(await h.ironic.getNode(oldIds.get(ref)!), ref.name).toBeUndefined();
    // Operations asked for right after: they meet the lost node, or the re-registered one.
    await h.hosts.reboot(refs.rebooted, 'hard');
    await h.hosts.holdPowerOff(refs.heldOff, 'maintenance', 'hard');

    const opsAfter = (ref: HostRef, v: HostView) => v.operations.filter((o) => o.seq > before.get(ref)!.operations.at(-1)!.seq);
    const reregistered = (ref: HostRef) => (v: HostView) =>
      v.status.provisioning.ID !== oldIds.get(ref) && opsAfter(ref, v).some((o) => o.kind === 'enroll' && o.outcome === 'succeeded');
    const end = {
      availableOn: await idle(refs.availableOn, 'available', (v) => reregistered(refs.availableOn)(v) && v.status.poweredOn),
      availableOff: await idle(refs.availableOff, 'available', (v) => reregistered(refs.availableOff)(v) && !v.status.poweredOn),
      provisioned: await idle(refs.provisioned, 'provisioned', (v) => reregistered(refs.provisioned)(v) && v.status.poweredOn),
      rebooted: await idle(refs.rebooted, 'provisioned', (v) =>
        reregistered(refs.rebooted)(v) && opsAfter(refs.rebooted, v).some((o) => o.kind === 'reboot' && o.outcome === 'succeeded')),
      heldOff: await idle(refs.heldOff, 'provisioned', (v) => reregistered(refs.heldOff)(v) && !v.status.poweredOn),
      midDeploy: await idle(refs.midDeploy, 'provisioned', reregistered(refs.midDeploy)),
    };

    const after = proxy.requests.slice(mark);
    for (const [key, ref] of Object.entries(refs) as [keyof typeof refs, HostRef][]) {
      const v = end[key];
      // Nothing is held against the host: the lost node was not an operation failure.
      expect(v.status.errorType, key).toBe('');
      expect(v.status.errorCount, key).toBe(0);
      expect(opsAfter(ref, v).map((o) => o.kind), key).not.toContain('inspect');
      // Its node again, by name, with metalflow's mark, under the id the host now holds.
      const node = (await h.ironic.getNode(ironicNodeName(ref))) as IronicNode;
      expect(node.uuid, key).toBe(v.status.provisioning.ID);
      expect(node.extra.metalflow_host, key).toBe(`${NS}/${ref.name}`);
      const ids = [oldIds.get(ref)!, v.status.provisioning.ID];
      const deploys = proxy.requests.filter((r) => isDeploy(r) && onNodes(ids)(r)).length;
      if (key === 'midDeploy') {
        // The deploy in flight is done again on the new node: it had never finished.
        expect(deploys, key).toBe(2);
        expect(node.provision_state).toBe('active');
      } else if (key === 'availableOn' || key === 'availableOff') {
        expect(deploys, key).toBe(0);
        expect(['manageable', 'available'], key).toContain(node.provision_state);
      } else {
        // Provisioned before: adopted with its image, not deployed again.
        expect(deploys, key).toBe(1);
        expect(after.filter((r) => verb(r, 'adopt') && onNodes(ids)(r)).length, key).toBe(1);
        expect(node.provision_state, key).toBe('active');
        expect(node.instance_info.image_source, key).toBe(IMAGE.url);
      }
    }
    expect(end.heldOff.power.holds).toHaveProperty('maintenance');
    expect(after.filter((r) => verb(r, 'inspect'))).toEqual([]);
    for (const ref of all) await h.client.workflow.getHandle(hostWorkflowId(ref)).terminate('test done');
  }, 900_000);
});
