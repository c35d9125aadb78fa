/**
 * Records, for the replay test, a host of era power-signal (versions.ts) told
 * by the power sentinel's `powerChanged` signal that its node was powered off
 * behind its back: it checks at once, records the mismatch and powers on
 * again (`host-power-signal.json`). Its own check is an hour away, so the
 * check in the history is the signal's. Never overwrites a fixture.
 * `node --import tsx test/support/record-power-signal-histories.ts` on a running test stack.
 */
import { IronicClient } from '../../clients/ironic/client';
import { hostWorkflowId } from '../../types/host-ref';
import { hostViewQuery, powerChangedSignal } from '../../workflows/definitions';
import { IRONIC_URL } from './env';
import { FAST_HOST_OPTIONS, randomMac, startHarness, waitFor } from './harness';
import { assertNewFixtures, saveHistory } from './record-fixture';

const FILE = 'host-power-signal.json';
assertNewFixtures(FILE);
const h = await startHarness({ hostOptions: { ...FAST_HOST_OPTIONS, powerCheckSeconds: 3600, watchedPowerCheckSeconds: 3600 } });
try {
  const ironic = new IronicClient({ url: IRONIC_URL });
  const ref = { namespace: 'replay', name: `power-signal-${Date.now()}` };
  const id = hostWorkflowId(ref);
  const handle = h.client.workflow.getHandle(id);
  await h.hosts.put(ref, {
    spec: { bmc: { address: 'fake://replay-power-signal', credentialsName: 'replay-power-signal-bmc' }, bootMACAddress: randomMac(), online: true, inspectionMode: 'disabled', automatedCleaningMode: 'disabled' },
    credentials: { username: 'admin', password: 'recorded-password' },
  });
  const v = await waitFor('available, on and idle', async () => {
    const x = await handle.query(hostViewQuery);
    return x.status.provisioning.state === 'available' && x.status.poweredOn && !x.currentOperation ? x : undefined;
  }, { timeoutMs: 120_000 });
  await ironic.setPowerState(v.status.provisioning.ID, 'power off');
  await handle.signal(powerChangedSignal, { at: new Date().toISOString(), from: 'power on', to: 'power off' });
  await waitFor('the mismatch recorded and the host on again', async () => {
    const x = await handle.query(hostViewQuery);
    return x.power.lastMismatch && x.status.poweredOn && !x.currentOperation ? true : undefined;
  }, { timeoutMs: 60_000 });
  // A second signal while all is well: a check that finds nothing to do.
  await handle.signal(powerChangedSignal, { at: new Date().toISOString(), from: 'power off', to: 'power on' });
  await waitFor('the second signal taken', async () => {
    const events = (await handle.fetchHistory()).events ?? [];
    const last = events.map((e, i) => (e.workflowExecutionSignaledEventAttributes ? i : -1)).filter((i) => i >= 0).pop() ?? -1;
    // After the second signal: a workflow task completed and a local activity's marker (the check) recorded.
    return events.slice(last + 1).some((e) => e.markerRecordedEventAttributes) ? true : undefined;
  }, { timeoutMs: 60_000 });
  await handle.terminate('recorded');
  saveHistory(id, FILE);
} finally {
  await h.close();
}
