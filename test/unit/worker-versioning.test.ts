import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../config/env';
import { defaultBuildId, loadWorkerVersion } from '../../config/worker-versioning';
import * as workflows from '../../workflows/index';
import { versioningBehaviorOf } from '../../workflows/common/versioning';

/** Kept only so histories of runs from before the operations moved into the host workflow replay; the worker's default (AUTO_UPGRADE) covers them. */
const OPERATION_WORKFLOWS = ['enrollWorkflow', 'inspectWorkflow', 'prepareWorkflow', 'provisionWorkflow', 'deprovisionWorkflow', 'powerWorkflow', 'rebootWorkflow', 'deleteWorkflow', 'detachWorkflow'];

describe('worker version config', () => {
  it('defaults to deployment metalflow and the package version with the commit', () => {
    const v = loadWorkerVersion({}, REPO_ROOT);
    expect(v?.deploymentName).toBe('metalflow');
    expect(v?.buildId).toBe(defaultBuildId(REPO_ROOT));
    expect(v?.buildId).toMatch(/^\d+\.\d+\.\d+(\+[0-9a-f]{12})?$/);
  });

  it('takes the deployment and build id from the environment, or none when off', () => {
    expect(loadWorkerVersion({ METALFLOW_WORKER_DEPLOYMENT: 'site-a', METALFLOW_WORKER_BUILD_ID: '0.2.0+abc' }, REPO_ROOT)).toEqual({ deploymentName: 'site-a', buildId: '0.2.0+abc' });
    expect(loadWorkerVersion({ METALFLOW_WORKER_VERSIONING: 'off', METALFLOW_WORKER_BUILD_ID: 'x' }, REPO_ROOT)).toBeUndefined();
  });

  it('names the variable and what is accepted when a value is wrong', () => {
    expect(() => loadWorkerVersion({ METALFLOW_WORKER_VERSIONING: 'no' }, REPO_ROOT)).toThrow('METALFLOW_WORKER_VERSIONING must be "on" or "off", got "no"');
    expect(() => loadWorkerVersion({ METALFLOW_WORKER_DEPLOYMENT: 'a.b' }, REPO_ROOT)).toThrow(/^METALFLOW_WORKER_DEPLOYMENT must not contain "\." or ":"/);
    expect(() => loadWorkerVersion({ METALFLOW_WORKER_BUILD_ID: 'v 2' }, REPO_ROOT)).toThrow(/^METALFLOW_WORKER_BUILD_ID must start with a letter or digit and hold only/);
    expect(() => loadWorkerVersion({ METALFLOW_WORKER_BUILD_ID: '' }, REPO_ROOT)).toThrow('METALFLOW_WORKER_BUILD_ID must not be empty');
    expect(() => loadWorkerVersion({ METALFLOW_WORKER_BUILD_ID: 'x'.repeat(256) }, REPO_ROOT)).toThrow('at most 255 characters, got 256');
  });
});

describe('workflow versioning behaviors', () => {
  it('names PINNED or AUTO_UPGRADE for every workflow type the worker registers', () => {
    const behaviors = Object.fromEntries(
      Object.entries(workflows)
        .filter(([name]) => !OPERATION_WORKFLOWS.includes(name))
        .map(([name, fn]) => [name, versioningBehaviorOf(fn)]),
    );
    expect(behaviors).toEqual({
      hostWorkflow: 'AUTO_UPGRADE',
      ipPoolWorkflow: 'AUTO_UPGRADE',
      provisioningLimiterWorkflow: 'AUTO_UPGRADE',
      powerSentinelWorkflow: 'AUTO_UPGRADE',
      fleetWorkflow: 'PINNED',
      pivotWorkflow: 'PINNED',
      remediateWorkflow: 'PINNED',
      firmwareInventoryWorkflow: 'PINNED',
      planeCheckWorkflow: 'PINNED',
      siteNodeHealthWorkflow: 'PINNED',
    });
  });
});
