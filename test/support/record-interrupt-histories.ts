/**
 * Records the histories of an interrupted host for the replay test (patches
 * `interruptible-operations`, `paused`, `settle-node-on-cancel`): a deploy that
 * hangs in Ironic's `wait call-back` (fake-hardware with the agent deploy) is
 * cancelled by a pause, a delete arrives while paused and runs once resumed.
 * Saves the host's run and the cancelled provision child. Never overwrites a
 * fixture. `node --import tsx test/support/record-interrupt-histories.ts [suffix]`
 * on a running test stack; after a versioned change to these paths, a suffix
 * naming it records the new shape beside the old (no suffix: the first shape).
 */
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostWorkflowId } from '../../types/host-ref';
import { hostViewQuery } from '../../workflows/definitions';
import type { hostWorkflow } from '../../workflows/host';
import { FAST_HOST_OPTIONS, randomMac, startHarness, waitFor } from './harness';
import { assertNewFixtures, saveHistory, saveOperationHistory } from './record-fixture';

const suffix = process.argv[2] ?? '';
assertNewFixtures(`host-paused-cancel-delete${suffix}.json`, `operation-provision-cancelled${suffix}.json`);
const body = Buffer.from('metalflow replay image');
const images = createServer((req, res) => {
  res.writeHead(200, { 'content-length': body.length });
  res.end(req.method === 'HEAD' ? undefined : body);
});
await new Promise<void>((resolve) => images.listen(0, '127.0.0.1', resolve));
const h = await startHarness({ hostOptions: FAST_HOST_OPTIONS });
try {
  const ref = { namespace: 'replay', name: `interrupted-${Date.now()}` };
  const handle = h.client.workflow.getHandle<typeof hostWorkflow>(hostWorkflowId(ref));
  const spec = {
    bmc: { address: 'fake://replay', credentialsName: 'replay-bmc' },
    bootMACAddress: randomMac(),
    online: true,
    automatedCleaningMode: 'disabled' as const,
  };
  await h.hosts.put(ref, { spec, credentials: { username: 'admin', password: 'replay' } });
  const nodeId = (
    await waitFor('available', async () => {
      const v = await handle.query(hostViewQuery);
      return v.status.provisioning.state === 'available' && !v.currentOperation ? v : undefined;
    })
  ).status.provisioning.ID;
  await h.ironic.patchNode(nodeId, [{ op: 'replace', path: '/deploy_interface', value: 'direct' }]);
  const { port } = images.address() as AddressInfo;
  await h.hosts.setImage(ref, {
    url: `http://127.0.0.1:${port}/replay.qcow2`,
    checksum: createHash('sha256').update(body).digest('hex'),
    checksumType: 'sha256',
    format: 'qcow2',
  });
  await waitFor('deploy waiting', async () => (await h.ironic.getNode(nodeId))?.provision_state === 'wait call-back');
  await h.hosts.setPaused(ref, true, 'replay');
  const paused = await waitFor('cancelled', async () => {
    const v = await handle.query(hostViewQuery);
    return v.currentOperation === undefined ? v : undefined;
  });
  const provision = [...paused.operations].reverse().find((o) => o.kind === 'provision')!;
  await h.hosts.remove(ref);
  await h.hosts.setPaused(ref, false);
  await handle.result();
  saveHistory(hostWorkflowId(ref), `host-paused-cancel-delete${suffix}.json`);
  saveOperationHistory(provision, `operation-provision-cancelled${suffix}.json`);
} finally {
  await h.close();
  images.close();
}
