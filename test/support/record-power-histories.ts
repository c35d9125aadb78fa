/**
 * Records histories of the power paths for the replay test, on the running
 * test stack: a host idling in `available` with periodic power checks, a
 * power mismatch found and corrected, a one-shot reboot and a keyed power-off
 * request (host-power<suffix>.json, operation-reboot<suffix>.json). Run it
 * after an intended, versioned change to those paths, with a suffix naming it:
 * `node --import tsx test/support/record-power-histories.ts -<patch id>` (with
 * the test stack up and its workflow bundle built from the current code, e.g.
 * after a test run with METALFLOW_KEEP_TEST_STACK=1). No suffix: the first shape.
 */
import { IronicClient } from '../../clients/ironic/client';
import { hostWorkflowId } from '../../types/host-ref';
import { hostViewQuery, powerRequestsUpdate, type HostView } from '../../workflows/definitions';
import { randomMac, startHarness, waitFor } from './harness';
import { IRONIC_URL } from './env';
import { assertNewFixtures, saveHistory } from './record-fixture';

const suffix = process.argv[2] ?? '';
// With a suffix also the power operation that held the host off (a power change with a mode, through
// the same path as a reboot; the first shape of a power operation came from record-histories.ts).
assertNewFixtures(`host-power${suffix}.json`, `operation-reboot${suffix}.json`, ...(suffix ? [`operation-power${suffix}.json`] : []));
const h = await startHarness({ hostOptions: { errorBackoffSeconds: 1, maxErrorBackoffSeconds: 4, powerCheckSeconds: 1, softPowerOffSeconds: 5 } });
const ironic = new IronicClient({ url: IRONIC_URL });
try {
  const ref = { namespace: 'replay', name: `power-${Date.now()}` };
  const handle = h.client.workflow.getHandle(hostWorkflowId(ref));
  const view = (): Promise<HostView> => handle.query(hostViewQuery);
  await h.hosts.put(ref, {
    spec: { bmc: { address: 'fake://replay-power', credentialsName: 'replay-power-bmc' }, bootMACAddress: randomMac(), online: true },
    credentials: { username: 'admin', password: 'recorded-password' },
  });
  await waitFor('available and on', async () => {
    const v = await view();
    return v.status.provisioning.state === 'available' && v.status.poweredOn && !v.currentOperation;
  });
  const nodeId = (await view()).status.provisioning.ID;
  await ironic.setPowerState(nodeId, 'power off');
  await waitFor('mismatch corrected', async () => {
    const v = await view();
    return v.power.lastMismatch !== undefined && v.status.poweredOn && !v.currentOperation;
  });
  // From patch reboot-request-ids on: the reboot carries an id, and is sent again under a new update id (nothing runs).
  const requestId = suffix === '' || suffix === '-ironic-power-quiet-retry' ? undefined : 'replay-reboot';
  await h.hosts.reboot(ref, 'soft', requestId);
  await waitFor('rebooted', async () => {
    const v = await view();
    return v.operations.some((o) => o.kind === 'reboot' && o.outcome === 'succeeded') && !v.currentOperation;
  });
  if (requestId) await handle.executeUpdate(powerRequestsUpdate, { args: [{ reboot: { mode: 'soft', requestId } }], updateId: `again-${Date.now()}` });
  await h.hosts.holdPowerOff(ref, 'replay', 'hard');
  await waitFor('held off', async () => !(await view()).status.poweredOn);
  await h.hosts.releasePowerOff(ref, 'replay');
  await waitFor('on again', async () => (await view()).status.poweredOn && !(await view()).currentOperation);
  await h.hosts.remove(ref);
  const { operations: ops } = (await handle.result()) as HostView;

  saveHistory(hostWorkflowId(ref), `host-power${suffix}.json`);
  const rebootOp = ops.find((o) => o.kind === 'reboot');
  if (rebootOp) saveHistory(rebootOp.workflowId, `operation-reboot${suffix}.json`);
  const powerOp = ops.find((o) => o.kind === 'power' && rebootOp !== undefined && o.seq > rebootOp.seq);
  if (suffix && powerOp) saveHistory(powerOp.workflowId, `operation-power${suffix}.json`);
} finally {
  await h.close();
}
