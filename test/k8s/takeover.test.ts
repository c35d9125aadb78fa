/**
 * Taking over a host Metal3's operator manages (issue 16, item 1): the node
 * is registered and deployed on Ironic directly, as BMO would have done
 * (named `<namespace>~<name>`, no metalflow mark), and the BareMetalHost
 * carries a status in BMO's shape, keys metalflow does not write included.
 * metalflow's controller, started after the object exists, adopts the host
 * from that status: it stays provisioned, Ironic receives no deploy, clean,
 * provision-state or power request for the node (counted at a recording
 * proxy in front of the worker's Ironic), and BMO's status keys are kept.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IronicClient } from '../../clients/ironic/client';
import type { IronicNode } from '../../clients/ironic/types';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery } from '../../contracts/host';
import { IRONIC_URL } from '../support/env';
import { randomMac, uniq, waitFor } from '../support/harness';
import { isPowerChange } from '../../bench/support/ironic-proxy';
import { deployedNode } from '../support/deployed-node';
import { startProxyProcess } from '../support/ironic-proxy-process';
import { kubectl } from './kube-harness';
import { hostDoc, secretDoc } from './manifests';
import { useShimSuite } from './shim-harness';

const NS = uniq('mf-takeover');
let proxy: Awaited<ReturnType<typeof startProxyProcess>> | undefined;
beforeAll(async () => {
  proxy = await startProxyProcess(IRONIC_URL, join(mkdtempSync(join(tmpdir(), 'mf-takeover-')), 'ironic-requests.jsonl'));
});
afterAll(() => proxy?.stop());
const suite = useShimSuite(NS, uniq('tq-takeover'), {}, () => ({ IRONIC_URL: proxy!.url }));
const ironic = new IronicClient({ url: IRONIC_URL });
const IMAGE = { url: 'http://127.0.0.1/images/bmo.qcow2', checksum: 'b'.repeat(64), checksumType: 'sha256', format: 'qcow2' };

/** What BMO leaves in Ironic for a provisioned host: its node, by BMO's name, deployed. */
const deployedByBmo = (name: string, mac: string): Promise<IronicNode> => deployedNode(ironic, `${NS}~${name}`, mac, IMAGE);

describe('a host Metal3 provisioned, taken over', () => {
  it('is adopted from its BMO status: still provisioned, no deploy, clean or power request, BMO keys kept', async () => {
    const name = 'bmo-host';
    const mac = randomMac();
    const node = await deployedByBmo(name, mac);
    expect(node.power_state).toBe('power on');

    // The object as BMO left it; metalflow's controller is down meanwhile (BMO scaled to 0, metalflow not yet up).
    suite.shim.running('controller')?.kill('SIGKILL');
    const secret = `${name}-bmc-secret`;
    kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify(secretDoc(secret, { username: 'admin', password: 'pw' })) });
    const secretVersion = kubectl(['get', 'secret', secret, '-n', NS, '-o', 'jsonpath={.metadata.resourceVersion}']).stdout;
    kubectl(['apply', '-n', NS, '-f', '-'], {
      input: JSON.stringify(hostDoc(name, { online: true, bootMACAddress: mac, bmc: { address: `fake://${name}`, credentialsName: secret }, image: IMAGE })),
    });
    const at = '2026-11-20T10:00:00Z';
    const bmoStatus = {
      operationalStatus: 'OK',
      lastUpdated: at,
      hardwareProfile: 'unknown',
      poweredOn: true,
      errorType: '',
      errorMessage: '',
      errorCount: 0,
      provisioning: { state: 'provisioned', ID: node.uuid, image: IMAGE, rootDeviceHints: { deviceName: '/dev/sda' }, bootMode: 'UEFI' },
      goodCredentials: { credentials: { name: secret, namespace: NS }, credentialsVersion: secretVersion },
      triedCredentials: { credentials: { name: secret, namespace: NS }, credentialsVersion: secretVersion },
      operationHistory: {
        register: { start: at, end: at },
        inspect: { start: at, end: at },
        provision: { start: at, end: at },
        deprovision: { start: null, end: null },
      },
    };
    kubectl(['patch', 'bmh', name, '-n', NS, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: bmoStatus })]);

    const mark = proxy!.requests().length;
    suite.shim.startController();
    const handle = suite.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name }));
    const view = await waitFor('the host adopted by a workflow of its own', async () => {
      const running = await handle.describe().then((d) => d.status.name === 'RUNNING', () => false);
      if (!running) return undefined;
      const v = await handle.query(hostViewQuery);
      return v.operations.some((o) => o.kind === 'enroll' && o.outcome === 'succeeded') && !v.currentOperation ? v : undefined;
    }, { timeoutMs: 120_000 });
    expect(view.status.provisioning).toMatchObject({ state: 'provisioned', ID: node.uuid });
    expect(view.operations.map((o) => o.kind)).toEqual(['enroll']);

    // Ironic: the node untouched but for its record (driver_info, the ownership mark): no verb, no power change.
    const onNode = proxy!.requests().slice(mark).filter((r) => r.path.includes(`/nodes/${node.uuid}`));
    expect(onNode.filter((r) => r.method === 'PUT' && /\/states\/provision$/.test(r.path))).toEqual([]);
    expect(onNode.filter(isPowerChange)).toEqual([]);
    const after = await ironic.getNode(node.uuid);
    expect(after).toMatchObject({ provision_state: 'active', power_state: 'power on', provision_updated_at: node.provision_updated_at });
    expect(after?.extra.metalflow_host).toBe(`${NS}/${name}`);

    const bmh = JSON.parse(kubectl(['get', 'bmh', name, '-n', NS, '-o', 'json']).stdout) as { status: Record<string, unknown> & { provisioning: Record<string, unknown> } };
    expect(bmh.status.provisioning).toMatchObject({ state: 'provisioned', ID: node.uuid, image: { url: IMAGE.url } });
    expect(bmh.status.operationalStatus).toBe('OK');
    // BMO's own keys, which metalflow does not compute, are kept.
    expect(bmh.status.hardwareProfile).toBe('unknown');
    expect(bmh.status.triedCredentials).toEqual(bmoStatus.triedCredentials);
    const events = JSON.parse(kubectl(['get', 'events', '-n', NS, '--field-selector', `involvedObject.name=${name}`, '-o', 'json']).stdout).items as { reason: string }[];
    expect(events.map((e) => e.reason)).toContain('WorkflowReadopted');
  });
});
