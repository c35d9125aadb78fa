/**
 * Records fleet operations and a labelled host for the replay test: a host
 * given `metadata.labels` (patch `host-labels`) through its lifecycle
 * (`host-labels<suffix>.json`); a reboot fleet whose history limit makes it
 * continue as new with hosts in flight (`fleet-reboot-continued<suffix>-run1.json`
 * and `-last.json`); a powerOff fleet cancelled after its first host, which
 * releases its hold (`fleet-poweroff-cancelled<suffix>.json`). Never overwrites
 * a fixture. `node --import tsx test/support/record-fleet-histories.ts <suffix>`
 * (default `-v1`) on a running test stack.
 */
import { hostWorkflowId } from '../../types/host-ref';
import type { FleetInput } from '../../types/fleet';
import { hostViewQuery } from '../../workflows/definitions';
import { cancelFleetUpdate, fleetProgressQuery, fleetWorkflowId } from '../../workflows/fleet-definitions';
import type { fleetWorkflow } from '../../workflows/fleet';
import { assertNewFixtures, saveHistory } from './record-fixture';
import { FAST_HOST_OPTIONS, randomMac, startHarness, waitFor, type Harness } from './harness';

const suffix = process.argv[2] ?? '-v1';
const files = {
  host: `host-labels${suffix}.json`,
  first: `fleet-reboot-continued${suffix}-run1.json`,
  last: `fleet-reboot-continued${suffix}-last.json`,
  cancelled: `fleet-poweroff-cancelled${suffix}.json`,
};
assertNewFixtures(...Object.values(files));

const stamp = Date.now();
const ns = `replay-fleet-${stamp}`;

async function availableHost(h: Harness, name: string, labels: Record<string, string>): Promise<void> {
  const ref = { namespace: ns, name };
  await h.hosts.put(ref, {
    metadata: { labels },
    spec: { bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc` }, bootMACAddress: randomMac(), online: true },
    credentials: { username: 'admin', password: 'pw' },
  });
  await waitFor(`${name} available`, async () => {
    const v = await h.hosts.get(ref);
    return v.status.provisioning.state === 'available' && v.status.poweredOn && !v.currentOperation;
  }, { timeoutMs: 240_000 });
}

async function runFleet(h: Harness, input: FleetInput, maxHistoryEvents?: number) {
  return h.client.workflow.start<typeof fleetWorkflow>('fleetWorkflow', {
    workflowId: fleetWorkflowId(input.name),
    taskQueue: h.taskQueue,
    args: [input, maxHistoryEvents ? { options: { maxHistoryEvents } } : {}],
  });
}

const h = await startHarness({ hostOptions: FAST_HOST_OPTIONS });
try {
  await Promise.all(['a', 'b', 'c'].map((x) => availableHost(h, `fleet-${x}`, { rack: 'r1' })));

  const reboot = await runFleet(h, { name: `replay-reboot-${stamp}`, operation: { kind: 'reboot', mode: 'hard' }, selector: { namespace: ns, labelSelector: { matchLabels: { rack: 'r1' } } }, maxConcurrent: 2 }, 40);
  const firstRun = reboot.firstExecutionRunId;
  const done = await reboot.result();
  if (done.runs < 2) throw new Error(`the reboot fleet did not continue as new (${done.runs} run)`);
  saveHistory(reboot.workflowId, files.first, firstRun);
  saveHistory(reboot.workflowId, files.last);

  const off = await runFleet(h, { name: `replay-off-${stamp}`, operation: { kind: 'powerOff' }, selector: { namespace: ns }, maxConcurrent: 1 });
  await waitFor('one host off', async () => (await off.query(fleetProgressQuery)).counts.succeeded >= 1, { timeoutMs: 240_000 });
  await off.executeUpdate(cancelFleetUpdate, { args: [{ reason: 'recording' }] });
  await off.result();
  saveHistory(off.workflowId, files.cancelled);

  // The labelled host: its labels changed once, then deleted.
  const ref = { namespace: ns, name: 'fleet-a' };
  const spec = (await h.client.workflow.getHandle(hostWorkflowId(ref)).query(hostViewQuery)).spec!;
  await h.hosts.put(ref, { metadata: { labels: { rack: 'r2' } }, spec });
  await h.hosts.remove(ref);
  await h.client.workflow.getHandle(hostWorkflowId(ref)).result();
  saveHistory(hostWorkflowId(ref), files.host);
} finally {
  await h.close();
}
