/**
 * Builds the worker: the workflow bundle plus activities wired to their clients
 * (dependency injection as in Temporal's samples), so tests and the binary
 * share one construction.
 */
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createIronicActivities, type IronicActivityDeps } from '../activities/ironic-activities';
import { createKubernetesActivities } from '../activities/kubernetes/host-status';
import { createBmcActivities } from '../activities/bmc-activities';
import type { KubeRest } from '../activities/kubernetes/kube-rest';
import { createPowerActivities } from '../activities/power-activities';

export const WORKFLOWS_PATH = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

export interface WorkerDeps extends IronicActivityDeps {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  /** When set, hosts driven by the Kubernetes shim get their status written back. */
  kubernetes?: KubeRest;
}

export async function createWorker(
  deps: WorkerDeps,
  overrides: Partial<WorkerOptions> = {},
): Promise<Worker> {
  const bmc = createBmcActivities({ secrets: deps.secrets });
  return Worker.create({
    connection: deps.connection,
    namespace: deps.namespace,
    taskQueue: deps.taskQueue,
    workflowsPath: WORKFLOWS_PATH,
    activities: {
      ...createIronicActivities(deps),
      ...bmc,
      ...createPowerActivities({ ironic: deps.ironic, bmc, poll: deps.poll }),
      ...(deps.kubernetes ? createKubernetesActivities({ rest: deps.kubernetes }) : {}),
    },
    // New hosts and every operation's child workflow start on the shared
    // (non-sticky) queue; the SDK's default gives it 2 of 10 pollers, which
    // caps how fast a fleet-wide change gets its first workflow tasks.
    maxConcurrentWorkflowTaskPolls: 20,
    nonStickyToStickyPollRatio: 0.5,
    // Most activities wait on Ironic or a BMC (a promise, no CPU): a fleet-wide
    // change has one per host in flight, far beyond the SDK's 100 slots.
    maxConcurrentActivityTaskExecutions: 2000,
    maxHeartbeatThrottleInterval: '15 seconds',
    ...overrides,
  });
}
