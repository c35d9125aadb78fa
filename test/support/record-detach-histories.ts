/**
 * Records a detach and a re-attach by adoption for the replay test: a
 * provisioned host is detached (Metal3's detached annotation, handed over as
 * the shim's directives), then attached again, which registers the node anew
 * and adopts it as it is (Ironic `adopt`, no deploy), and is deleted. Saves
 * the host's run, the detach and the adopting enroll. Never overwrites a
 * fixture. `node --import tsx test/support/record-detach-histories.ts` on a
 * running test stack.
 */
import { hostWorkflowId } from '../../types/host-ref';
import { applyDirectivesUpdate, hostViewQuery, type HostView } from '../../workflows/definitions';
import type { hostWorkflow } from '../../workflows/host';
import { FAST_HOST_OPTIONS, randomMac, startHarness, waitFor } from './harness';
import { assertNewFixtures, saveHistory, saveOperationHistory } from './record-fixture';

const FILES = { host: 'host-detach-reattach-adopt.json', detach: 'operation-detach.json', adopt: 'operation-enroll-adopt.json' };
assertNewFixtures(...Object.values(FILES));
const h = await startHarness({ hostOptions: FAST_HOST_OPTIONS });
try {
  const ref = { namespace: 'replay', name: `detached-${Date.now()}` };
  const handle = h.client.workflow.getHandle<typeof hostWorkflow>(hostWorkflowId(ref));
  const settled = (check: (v: HostView) => boolean) => async () => {
    const v = await handle.query(hostViewQuery);
    return !v.currentOperation && check(v) ? v : undefined;
  };
  await h.hosts.put(ref, {
    spec: { bmc: { address: 'fake://replay-detach', credentialsName: 'replay-detach-bmc' }, bootMACAddress: randomMac(), online: true },
    credentials: { username: 'admin', password: 'recorded-password' },
  });
  await waitFor('available', settled((v) => v.status.provisioning.state === 'available'));
  await h.hosts.setImage(ref, { url: 'http://127.0.0.1/replay.qcow2', checksum: 'f'.repeat(64), format: 'qcow2' });
  await waitFor('provisioned', settled((v) => v.status.provisioning.state === 'provisioned'));
  await handle.executeUpdate(applyDirectivesUpdate, { args: [{ detached: { deleteAction: 'delay', force: false } }] });
  await waitFor('detached', settled((v) => v.status.operationalStatus === 'detached'));
  await handle.executeUpdate(applyDirectivesUpdate, { args: [{}] });
  const reattached = (v: HostView) => v.operations.findIndex((o) => o.kind === 'enroll' && o.seq > (v.operations.find((d) => d.kind === 'detach')?.seq ?? Infinity)) >= 0;
  const attached = await waitFor('attached again', settled((v) => v.status.operationalStatus === 'OK' && reattached(v)));
  if (attached.status.provisioning.state !== 'provisioned') throw new Error(`re-attached as ${attached.status.provisioning.state}, not adopted`);
  await h.hosts.remove(ref);
  const { operations } = await handle.result();
  const detach = operations.find((o) => o.kind === 'detach');
  const adopt = operations.filter((o) => o.kind === 'enroll').at(-1);
  if (!detach || !adopt) throw new Error('no detach or no re-attaching enroll in the host’s operations');
  saveHistory(hostWorkflowId(ref), FILES.host);
  saveOperationHistory(detach, FILES.detach);
  saveOperationHistory(adopt, FILES.adopt);
} finally {
  await h.close();
}
