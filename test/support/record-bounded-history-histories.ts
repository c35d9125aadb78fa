/**
 * Records, for the replay test, hosts of era bounded-history (versions.ts) in
 * Kubernetes mode whose status writes cannot finish: the worker's API server
 * address answers nothing (a closed port on 127.0.0.1), so every write waits
 * in its retries.
 * - `host-bounded-history-outbox-run1.json` / `-run2.json`: a host handed over
 *   (maxHistoryEvents 20) with its write unfinished, and the run after it,
 *   which writes the carried outbox first; deleted through the API.
 * - `host-bounded-history-bytes-run1.json`: on a worker without Kubernetes
 *   (each write fails at once, so each carries the whole status), a host
 *   restored with an inventory of 40 KB, handed over by the bytes it wrote
 *   past a limit of 64 KiB (the restored status and its first write) while
 *   it waited for its spec, its write in flight; its event count stays far
 *   below its limit. Small sizes keep the fixture small.
 * - `host-bounded-history-bytes-backoff-run1.json`: the same with a limit of
 *   96 KiB and no credentials Secret: its registration fails, and it hands
 *   over from the error backoff.
 * Never overwrites a fixture.
 * `node --import tsx test/support/record-bounded-history-histories.ts [outbox|bytes]` on a running test stack.
 */
import { createServer } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeRest } from '../../clients/kubernetes/kube-rest';
import { readoptHost } from '../../clients/temporal/host-run';
import { hostWorkflowId } from '../../types/host-ref';
import { hostViewQuery } from '../../workflows/definitions';
import type { hostWorkflow } from '../../workflows/host';
import { FAST_HOST_OPTIONS, randomMac, startHarness, waitFor } from './harness';
import { largeInventory, statusWithInventory } from './large-inventory';
import { assertNewFixtures, saveHistory } from './record-fixture';

const OUTBOX = ['host-bounded-history-outbox-run1.json', 'host-bounded-history-outbox-run2.json'];
const BYTES: [file: string, limit: number][] = [
  ['host-bounded-history-bytes-run1.json', 64 * 1024],
  ['host-bounded-history-bytes-backoff-run1.json', 96 * 1024],
];
/** `outbox`, `bytes` or `bytes-backoff` records only that shape; none, all. */
const only = process.argv[2];
const recordOutbox = only === undefined || only === 'outbox';
const bytesShapes = BYTES.filter(([file]) => only === undefined || file === `host-bounded-history-${only}-run1.json`);
assertNewFixtures(...(recordOutbox ? OUTBOX : []), ...bytesShapes.map(([file]) => file));

/** A port nothing listens on: taken, then released. */
const closedPort = await new Promise<number>((resolve) => {
  const s = createServer().listen(0, '127.0.0.1', () => {
    const { port } = s.address() as { port: number };
    s.close(() => resolve(port));
  });
});
const kc = new KubeConfig();
kc.loadFromOptions({
  clusters: [{ name: 'away', server: `https://127.0.0.1:${closedPort}`, skipTLSVerify: true }],
  users: [{ name: 'away', token: 'none' }],
  contexts: [{ name: 'away', cluster: 'away', user: 'away' }],
  currentContext: 'away',
});
const h = await startHarness({ kubernetes: await KubeRest.create(kc), hostOptions: { ...FAST_HOST_OPTIONS, publishStatus: true, maxHistoryEvents: 20 } });
try {
  const stamp = Date.now();
  const runsOf = async (id: string): Promise<string[]> => {
    const runs: { runId: string; start: number }[] = [];
    for await (const wf of h.client.workflow.list({ query: `WorkflowId = '${id}'` })) runs.push({ runId: wf.runId, start: wf.startTime.getTime() });
    return runs.sort((a, b) => a.start - b.start).map((r) => r.runId);
  };

  if (recordOutbox) {
    // Handed over with the write unfinished.
    const ref = { namespace: 'replay', name: `bounded-history-outbox-${stamp}` };
    const id = hostWorkflowId(ref);
    const handle = h.client.workflow.getHandle<typeof hostWorkflow>(id);
    await h.hosts.put(ref, {
      spec: { bmc: { address: 'fake://replay-bounded-history', credentialsName: 'replay-bounded-history-bmc' }, bootMACAddress: randomMac(), online: true },
      credentials: { username: 'admin', password: 'recorded-password' },
    });
    await waitFor('available, idle and in its second run', async () => {
      const v = await handle.query(hostViewQuery);
      return v.status.provisioning.state === 'available' && !v.currentOperation && (await runsOf(id)).length >= 2 ? true : undefined;
    }, { timeoutMs: 120_000 });
    await h.hosts.remove(ref);
    await handle.result();
    const runs = await runsOf(id);
    saveHistory(id, OUTBOX[0]!, runs[0]);
    saveHistory(id, OUTBOX[1]!, runs[1]);
  }

  for (const [file, limit] of bytesShapes) {
    // Handed over by bytes: the inventory in every write.
    const noKube = await startHarness({ hostOptions: FAST_HOST_OPTIONS });
    const big = { namespace: 'replay', name: `bounded-history-bytes-${limit}-${stamp}` };
    const bigId = hostWorkflowId(big);
    try {
      await readoptHost(noKube.client, {
        ref: big,
        taskQueue: noKube.taskQueue,
        options: { ...FAST_HOST_OPTIONS, publishStatus: true, maxHistoryBytes: limit },
        status: statusWithInventory(largeInventory(40)),
        spec: { bmc: { address: 'fake://replay-bounded-history-bytes', credentialsName: 'replay-bounded-history-bytes-bmc' }, bootMACAddress: randomMac(), online: true },
      });
      await waitFor('handed over', async () => ((await runsOf(bigId)).length >= 2 ? true : undefined), { timeoutMs: 300_000 });
      saveHistory(bigId, file, (await runsOf(bigId))[0]);
      await noKube.client.workflow.getHandle(bigId).terminate('recorded');
    } finally {
      await noKube.close();
    }
  }
} finally {
  await h.close();
}
