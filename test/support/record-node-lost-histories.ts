/**
 * Records hosts whose Ironic node was lost, for the replay test (patch
 * `reregister-lost-node`): on an Ironic of its own (test/support/own-ironic.ts),
 * two provisioned fake-hardware hosts; Ironic restarts with an empty
 * database; one (no power checks) is asked for a reboot, which meets the lost
 * node, registers again (adopting it) and reboots; the other's power check
 * finds the node gone and it registers again. Both are then deleted. Saves
 * `host-node-lost-operation.json` and `host-node-lost-power-check.json`.
 * Never overwrites a fixture. `node --import tsx test/support/record-node-lost-histories.ts`
 * with the test stack's Temporal running.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../config/env';
import { hostWorkflowId } from '../../types/host-ref';
import { hostViewQuery, type HostView } from '../../workflows/definitions';
import type { hostWorkflow } from '../../workflows/host';
import { TEMPORAL_ADDRESS } from './env';
import { FAST_HOST_OPTIONS, randomMac, startHarness, waitFor, type Harness } from './harness';
import { ownIronic } from './own-ironic';
import { unusedPort } from './ports';

const OUT = join(REPO_ROOT, 'test', 'fixtures', 'histories');
const ironic = ownIronic('record-node-lost', await unusedPort());
await ironic.start();
const harnesses: Harness[] = [];
try {
  const byOperation = await startHarness({ ironicUrl: ironic.url, hostOptions: { ...FAST_HOST_OPTIONS, powerCheckSeconds: 0 } });
  harnesses.push(byOperation);
  const byCheck = await startHarness({ ironicUrl: ironic.url, hostOptions: { ...FAST_HOST_OPTIONS, powerCheckSeconds: 1 } });
  harnesses.push(byCheck);
  const hosts = [
    { h: byOperation, ref: { namespace: 'replay', name: `node-lost-op-${Date.now()}` }, file: 'host-node-lost-operation.json' },
    { h: byCheck, ref: { namespace: 'replay', name: `node-lost-check-${Date.now()}` }, file: 'host-node-lost-power-check.json' },
  ];
  const view = (x: (typeof hosts)[number]): Promise<HostView> =>
    x.h.client.workflow.getHandle<typeof hostWorkflow>(hostWorkflowId(x.ref)).query(hostViewQuery);
  for (const x of hosts) {
    await x.h.hosts.put(x.ref, {
      spec: { bmc: { address: `fake://${x.ref.name}`, credentialsName: `${x.ref.name}-bmc` }, bootMACAddress: randomMac(), online: true, automatedCleaningMode: 'disabled' },
      credentials: { username: 'admin', password: 'recorded-password' },
    });
  }
  for (const x of hosts) {
    await waitFor('available', async () => (await view(x)).status.provisioning.state === 'available' && !(await view(x)).currentOperation);
    await x.h.hosts.setImage(x.ref, { url: 'http://127.0.0.1/replay.qcow2', checksum: 'f'.repeat(64), format: 'qcow2' });
  }
  const ids = new Map<string, string>();
  for (const x of hosts) {
    const v = await waitFor('provisioned', async () => {
      const v = await view(x);
      return v.status.provisioning.state === 'provisioned' && !v.currentOperation && v.status.poweredOn ? v : undefined;
    });
    ids.set(x.ref.name, v.status.provisioning.ID);
  }
  await ironic.restartEmpty();
  await byOperation.hosts.reboot(hosts[0]!.ref, 'hard');
  for (const x of hosts) {
    await waitFor('registered again', async () => {
      const v = await view(x);
      const rebooted = x.h !== byOperation || v.operations.some((o) => o.kind === 'reboot' && o.outcome === 'succeeded');
      return v.status.provisioning.ID !== ids.get(x.ref.name) && !v.currentOperation && rebooted;
    }, { timeoutMs: 120_000 });
    await x.h.hosts.remove(x.ref);
    await x.h.client.workflow.getHandle(hostWorkflowId(x.ref)).result();
    const json = execFileSync(join(REPO_ROOT, '.venv', 'bin', 'temporal'), [
      'workflow', 'show', '--address', TEMPORAL_ADDRESS, '-w', hostWorkflowId(x.ref), '-o', 'json',
    ]);
    writeFileSync(join(OUT, x.file), json, { flag: 'wx' });
    console.log(`recorded ${hostWorkflowId(x.ref)} → ${x.file}`);
  }
} finally {
  for (const h of harnesses) await h.close();
  await ironic.stop();
}
