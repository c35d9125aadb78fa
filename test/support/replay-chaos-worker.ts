/**
 * The worker process of test/support/replay-chaos.ts: the real workflow bundle, with the few activities an
 * idle, Kubernetes-driven host calls answered at once (after a random delay) instead of by Ironic and the
 * API server, so the driver can stop (SIGSTOP) and kill it as load and crashes would.
 * Arguments: Temporal address, task queue, workflow bundle path.
 */
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';

const [address, taskQueue, bundle] = process.argv.slice(2);
Runtime.install({ logger: new DefaultLogger('ERROR') });
const upTo = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.random() * ms));
const READ_MS = Number(process.env.REPLAY_CHAOS_READ_MS ?? 300);
const PUBLISH_MS = Number(process.env.REPLAY_CHAOS_PUBLISH_MS ?? 1500);

const worker = await Worker.create({
  connection: await NativeConnection.connect({ address: address! }),
  taskQueue: taskQueue!,
  workflowBundle: { codePath: bundle! },
  // The status write to the BareMetalHost (workflows/host/status-publish.ts): taken and dropped, as the writer queues it.
  sinks: { hostStatus: { write: { fn: () => undefined, callDuringReplay: false } } },
  activities: {
    // The status write of runs recorded before the worker's writer (workflows/host/status-publish.ts).
    async publishHostStatus() {
      await upTo(PUBLISH_MS);
      return { published: true };
    },
    // The idle power check's local activity (workflows/host/rules/power-check.ts): the power the status shows.
    async readHostPower() {
      await upTo(READ_MS);
      return { poweredOn: true };
    },
    async idleFence() {},
  },
});
await worker.run();
