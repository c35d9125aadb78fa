/**
 * A worker's Worker Deployment Version becomes the deployment's current one
 * when the deployment has none yet: a first install needs no operator step.
 * Never otherwise: an upgrade is the operator's ramp and promote
 * (docs/operations.md, "Upgrading workers"), so a new build started beside
 * the old one takes no new runs until it is promoted.
 *
 * The version exists on the server only once the worker polls, so this runs
 * beside `worker.run()` and waits for it to appear.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { isGrpcServiceError, type Connection } from '@temporalio/client';
import type { WorkerVersion } from '../config/worker-versioning';

/** gRPC status codes (the wire values; @grpc/grpc-js is not our dependency). */
const NOT_FOUND = 5;
const FAILED_PRECONDITION = 9;
const ABORTED = 10;

export type CurrentVersionOutcome =
  /** This worker's version was made current (the deployment had none). */
  | { kind: 'made-current' }
  /** Already current (another worker of the build, or an earlier start). */
  | { kind: 'current' }
  /** Another build is current: this one serves only runs pinned to it until it is promoted. */
  | { kind: 'not-current'; currentBuildId: string };

export interface CurrentVersionOptions {
  connection: Pick<Connection, 'workflowService'>;
  namespace: string;
  version: WorkerVersion;
  identity: string;
  /** Between two looks while the version is not registered yet. */
  intervalMs?: number;
  /** Gives up (throws) after this long without the version registered. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export async function becomeCurrentIfNone(opts: CurrentVersionOptions): Promise<CurrentVersionOutcome> {
  const { connection, namespace, version, identity } = opts;
  const service = connection.workflowService;
  const intervalMs = opts.intervalMs ?? 500;
  const deadline = Date.now() + (opts.timeoutMs ?? 120_000);
  for (;;) {
    try {
      const described = await service.describeWorkerDeployment({ namespace, deploymentName: version.deploymentName });
      const info = described.workerDeploymentInfo;
      const current = info?.routingConfig?.currentDeploymentVersion?.buildId;
      if (current) return current === version.buildId ? { kind: 'current' } : { kind: 'not-current', currentBuildId: current };
      if (info?.versionSummaries?.some((v) => v.deploymentVersion?.buildId === version.buildId)) {
        // The token makes two workers starting at once agree: the second one's write is refused and it looks again.
        await service.setWorkerDeploymentCurrentVersion({
          namespace,
          deploymentName: version.deploymentName,
          buildId: version.buildId,
          conflictToken: described.conflictToken,
          identity,
        });
        return { kind: 'made-current' };
      }
    } catch (err) {
      // Not found: no worker of the deployment has polled yet. The others: a concurrent change, look again.
      if (!(isGrpcServiceError(err) && [NOT_FOUND, FAILED_PRECONDITION, ABORTED].includes(err.code))) throw err;
    }
    if (Date.now() >= deadline) {
      throw new Error(
        `worker deployment version ${version.deploymentName}:${version.buildId} did not register with Temporal within ${Math.round((opts.timeoutMs ?? 120_000) / 1000)} s; ` +
          'does the server support Worker Deployments? METALFLOW_WORKER_VERSIONING=off runs the worker unversioned',
      );
    }
    await delay(intervalMs, undefined, opts.signal ? { signal: opts.signal } : {});
  }
}

/** What the worker says at start about its version. */
export function describeOutcome(version: WorkerVersion, outcome: CurrentVersionOutcome): string {
  const v = `${version.deploymentName}:${version.buildId}`;
  switch (outcome.kind) {
    case 'made-current':
      return `worker deployment version ${v} is now current (the deployment had none)`;
    case 'current':
      return `worker deployment version ${v} is current`;
    case 'not-current':
      return (
        `worker deployment version ${v} is not current (${outcome.currentBuildId} is): it runs only workflows pinned to it. ` +
        `Ramp it with \`temporal worker deployment set-ramping-version --deployment-name ${version.deploymentName} --build-id ${version.buildId} --percentage 10\`, ` +
        `promote it with \`temporal worker deployment set-current-version --deployment-name ${version.deploymentName} --build-id ${version.buildId}\` (docs/operations.md)`
      );
  }
}
