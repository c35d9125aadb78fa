/**
 * Each workflow type's Worker Versioning behavior (docs/operations.md,
 * "Upgrading workers"), for workers that poll as a Worker Deployment Version.
 *
 * PINNED: a run stays on the build that started it until it closes, so a
 * change to these types needs no `patched()`: old runs finish on the old
 * build, new runs start on the new one. They end on their own (one read, one
 * check, one remediation, one fleet change or pivot).
 *
 * AUTO_UPGRADE: a run moves to the current build at its next workflow task,
 * so a change to these types still needs `patched()`. They live as long as
 * what they stand for (a host, an IP pool, the limiter, the sentinel);
 * pinning them would hold an old build running for ever.
 *
 * Types not named here (the operation workflows kept for old host histories)
 * take the worker's default, AUTO_UPGRADE.
 */
import { setWorkflowOptions, workflowInfo } from '@temporalio/workflow';
import type { VersioningBehavior } from '@temporalio/common';
import { hostWorkflow } from '../host/host';
import { fleetWorkflow } from '../fleet/fleet';
import { remediateWorkflow } from '../remediation/remediate';
import { provisioningLimiterWorkflow } from '../limiter/provisioning-limiter';
import { pivotWorkflow } from '../pivot/pivot';
import { planeCheckWorkflow } from '../pivot/plane-check';
import { ipPoolWorkflow } from '../ipam/ippool';
import { firmwareInventoryWorkflow } from '../firmware/firmware-inventory';
import { powerSentinelWorkflow } from '../power/power-sentinel';
import { siteNodeHealthWorkflow } from '../site/node-health';

type WorkflowFn = (...args: never[]) => Promise<unknown>;

export const WORKFLOW_VERSIONING: ReadonlyArray<readonly [WorkflowFn, VersioningBehavior]> = [
  [fleetWorkflow, 'PINNED'],
  [pivotWorkflow, 'PINNED'],
  [remediateWorkflow, 'PINNED'],
  [firmwareInventoryWorkflow, 'PINNED'],
  [planeCheckWorkflow, 'PINNED'],
  [siteNodeHealthWorkflow, 'PINNED'],
  [hostWorkflow, 'AUTO_UPGRADE'],
  // One pool's allocation table for as long as the pool exists.
  [ipPoolWorkflow, 'AUTO_UPGRADE'],
  [provisioningLimiterWorkflow, 'AUTO_UPGRADE'],
  [powerSentinelWorkflow, 'AUTO_UPGRADE'],
];

/** The behavior of a workflow function, or undefined for a type this module does not name. */
export function versioningBehaviorOf(fn: unknown): VersioningBehavior | undefined {
  return WORKFLOW_VERSIONING.find(([f]) => f === fn)?.[1];
}

// Asked once per run, on the worker that first runs it: only a versioned worker may state a behavior
// (the server refuses a workflow task completion of an unversioned one that does, METALFLOW_WORKER_VERSIONING=off).
for (const [fn, versioningBehavior] of WORKFLOW_VERSIONING) {
  setWorkflowOptions(
    () => (workflowInfo().currentDeploymentVersion?.deploymentName ? { versioningBehavior } : {}),
    fn as (...args: unknown[]) => Promise<unknown>,
  );
}
