/**
 * A PINNED workflow of test/integration/worker-versioning.test.ts that stays
 * open until signalled and reports the build each of its workflow tasks ran on.
 */
import { condition, defineSignal, setHandler, setWorkflowOptions, workflowInfo } from '@temporalio/workflow';

export const proceedSignal = defineSignal('proceed');

export async function pinnedProbeWorkflow(): Promise<string[]> {
  const builds = [workflowInfo().currentDeploymentVersion?.buildId ?? 'unversioned'];
  let proceed = false;
  setHandler(proceedSignal, () => {
    proceed = true;
  });
  await condition(() => proceed);
  builds.push(workflowInfo().currentDeploymentVersion?.buildId ?? 'unversioned');
  return builds;
}
setWorkflowOptions({ versioningBehavior: 'PINNED' }, pinnedProbeWorkflow);
