/**
 * The fake agent (bench/support/fake-agent.ts) drives Ironic through the same
 * provision states as the real ironic-python-agent: one host through the
 * lifecycle agent-path.test.ts runs with the real agent (enrolled, agent
 * inspection, automated cleaning, a qcow2 deployed by direct deploy over
 * Redfish virtual media), its states read from Ironic's log and compared with
 * the real agent's (test/fixtures/agent-path/provision-states.json, which
 * agent-path.test.ts checks against the real agent on every run). No root:
 * the fake agent writes nothing.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../config/env';
import type { HostRef } from '../../model/host';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery, type HostView } from '../../contracts/host';
import { agentLabUnavailable, startAgentLab, type AgentLab, type LabHost } from '../support/agent-lab';
import { sha256 } from '../support/config-drive-iso';
import { FAST_HOST_OPTIONS, randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';
import { imageBytes } from '../support/image-bytes';
import { startImageServer, type ImageServer } from '../support/image-server';

const unavailable = agentLabUnavailable('fake');
if (unavailable) console.warn(`[fake-agent-states] skipped: ${unavailable}`);

const NS = 'fake-agent';
const recorded = JSON.parse(readFileSync(join(REPO_ROOT, 'test', 'fixtures', 'agent-path', 'provision-states.json'), 'utf8')) as { states: string[] };

describe.skipIf(unavailable !== undefined)('the fake agent', () => {
  const host: LabHost = { name: uniq('fa'), uuid: randomUUID(), mac: randomMac(), disks: ['8G'] };
  const ref: HostRef = { namespace: NS, name: host.name };
  const image = imageBytes.qcow2();
  let lab: AgentLab;
  let h: Harness;
  let images: ImageServer;

  beforeAll(async () => {
    images = await startImageServer({ '/image.qcow2': { body: image } });
    lab = await startAgentLab('fake-agent', [host], [], { agent: 'fake' });
    h = await startHarness({ ironicUrl: lab.ironicUrl, hostOptions: { ...FAST_HOST_OPTIONS }, inspection: 'agent' });
  }, 300_000);

  afterAll(async () => {
    await h?.close();
    await lab?.close();
    await images?.close();
  }, 120_000);

  const view = (): Promise<HostView> => h.client.workflow.getHandle(hostWorkflowId(ref)).query(hostViewQuery);
  const idle = (what: string, ok: (v: HostView) => boolean) =>
    waitFor(what, async () => {
      const v = await view();
      if (v.status.errorType) throw new Error(`${what}: host error ${v.status.errorType}: ${v.status.errorMessage}`);
      return !v.currentOperation && ok(v) ? v : undefined;
    }, { timeoutMs: 420_000, intervalMs: 500 });

  it('drives Ironic through the real agent\'s provision states, inspecting, cleaning and deploying one host', async () => {
    await h.hosts.put(ref, {
      spec: { bmc: { address: lab.bmcAddress(host), credentialsName: `${host.name}-bmc` }, bootMACAddress: host.mac, bootMode: 'UEFI', online: false },
      credentials: { username: 'admin', password: 'password' },
    });
    const available = await idle('available after agent inspection', (v) => v.status.provisioning.state === 'available');
    // The inventory the fake sent reached status.hardware as the real agent's does.
    expect(available.status.hardware?.nics?.map((n) => n.mac)).toEqual([host.mac]);
    expect(available.status.hardware?.storage?.map((d) => [d.serialNumber, d.sizeBytes])).toEqual([['disk0', 8 * 2 ** 30]]);

    await h.hosts.put(ref, {
      spec: {
        ...available.spec,
        online: true,
        rootDeviceHints: { serialNumber: 'disk0' },
        image: { url: images.url('/image.qcow2'), checksum: sha256(image), checksumType: 'sha256', format: 'qcow2' },
      },
    });
    const provisioned = await idle('provisioned through the fake agent', (v) => v.status.provisioning.state === 'provisioned');

    expect(lab.provisionStates(provisioned.status.provisioning.ID)).toEqual(recorded.states);
    // Booted three times as the real agent is (inspection, cleaning, deploy), each boot ended by a power off.
    const events = await waitFor('the agent halted after the deploy', async () => {
      const mine = lab.events().filter((e) => e.host === host.name);
      return mine.length >= 6 ? mine : undefined;
    });
    expect(events.map((e) => e.action)).toEqual(['started', 'stopped', 'started', 'stopped', 'started', 'stopped']);
    const counts = lab.fakeAgent!.counts;
    expect(counts.inspections).toBe(1);
    expect(counts.commands['deploy.execute_deploy_step']).toBe(1);
  }, 900_000);
});
