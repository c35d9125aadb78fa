/**
 * Records fleet operations after patch fleet-waves for the replay test: a
 * reboot fleet in waves of one that pauses after each wave and is resumed
 * (`fleet-waves-paused<suffix>.json`); a provision fleet whose two stuck
 * deploys are stopped by a cancel with abortInFlight
 * (`fleet-cancel-abort-in-flight<suffix>.json`). Never overwrites a fixture.
 * `node --import tsx test/support/record-fleet-waves-histories.ts <suffix>`
 * (default `-v1`) on a running test stack.
 */
import { createHash } from 'node:crypto';
import type { FleetInput } from '../../types/fleet';
import { cancelFleetUpdate, fleetProgressQuery, fleetWorkflowId, resumeFleetUpdate } from '../../workflows/fleet-definitions';
import type { fleetWorkflow } from '../../workflows/fleet';
import { hostViewQuery } from '../../workflows/definitions';
import { hostWorkflowId } from '../../types/host-ref';
import { assertNewFixtures, saveHistory } from './record-fixture';
import { startImageServer } from './image-server';
import { FAST_HOST_OPTIONS, randomMac, startHarness, waitFor, type Harness } from './harness';

const suffix = process.argv[2] ?? '-v1';
const files = { waves: `fleet-waves-paused${suffix}.json`, abort: `fleet-cancel-abort-in-flight${suffix}.json` };
assertNewFixtures(...Object.values(files));

const stamp = Date.now();
const ns = `replay-fleet-waves-${stamp}`;

async function availableHost(h: Harness, name: string): Promise<string> {
  const ref = { namespace: ns, name };
  await h.hosts.put(ref, {
    spec: { bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc` }, bootMACAddress: randomMac(), online: true, automatedCleaningMode: 'disabled' },
    credentials: { username: 'admin', password: 'pw' },
  });
  return waitFor(`${name} available`, async () => {
    const v = await h.client.workflow.getHandle(hostWorkflowId(ref)).query(hostViewQuery);
    return v.status.provisioning.state === 'available' && v.status.poweredOn && !v.currentOperation ? v.status.provisioning.ID : undefined;
  }, { timeoutMs: 240_000 });
}

const start = (h: Harness, input: FleetInput) =>
  h.client.workflow.start<typeof fleetWorkflow>('fleetWorkflow', { workflowId: fleetWorkflowId(input.name), taskQueue: h.taskQueue, args: [input] });

const body = `metalflow replay image ${stamp}`;
const images = await startImageServer({ '/stuck.qcow2': { body } });
const h = await startHarness({ hostOptions: FAST_HOST_OPTIONS });
try {
  const names = ['wave-a', 'wave-b', 'wave-c'];
  const nodes = await Promise.all(names.map((n) => availableHost(h, n)));

  const waves = await start(h, { name: `replay-waves-${stamp}`, operation: { kind: 'reboot' }, selector: { namespace: ns }, maxConcurrent: 2, waves: [{ size: 1 }], pauseAfterWave: true });
  for (const wave of [2, 3]) {
    await waitFor(`paused before wave ${wave}`, async () => {
      const p = await waves.query(fleetProgressQuery);
      return p.phase === 'paused' && p.counts.inFlight === 0 && p.wave?.current === wave;
    }, { timeoutMs: 240_000 });
    await waves.executeUpdate(resumeFleetUpdate);
  }
  await waves.result();
  saveHistory(waves.workflowId, files.waves);

  // Two deploys that hang (Ironic's direct deploy waits for an agent that never calls), then aborted.
  for (const id of nodes.slice(0, 2)) await h.ironic.patchNode(id, [{ op: 'replace', path: '/deploy_interface', value: 'direct' }]);
  const image = { url: images.url('/stuck.qcow2'), checksum: createHash('sha256').update(body).digest('hex'), checksumType: 'sha256' as const, format: 'qcow2' as const };
  const abort = await start(h, { name: `replay-abort-${stamp}`, operation: { kind: 'provision', image }, selector: { namespace: ns }, maxConcurrent: 2 });
  for (const id of nodes.slice(0, 2)) await waitFor(`${id} waiting for its agent`, async () => (await h.ironic.getNode(id))?.provision_state === 'wait call-back', { timeoutMs: 240_000 });
  await abort.executeUpdate(cancelFleetUpdate, { args: [{ reason: 'recording', abortInFlight: true }] });
  const done = await abort.result();
  if (done.counts.cancelled !== 2) throw new Error(`expected two hosts cancelled, got ${JSON.stringify(done.counts)}`);
  saveHistory(abort.workflowId, files.abort);
} finally {
  await h.close();
  await images.close();
}
