/**
 * The worker's Worker Deployment Version (Temporal Worker Versioning): the
 * deployment name and build id it polls as, from METALFLOW_WORKER_DEPLOYMENT,
 * METALFLOW_WORKER_BUILD_ID and METALFLOW_WORKER_VERSIONING (docs/operations.md,
 * "Upgrading workers").
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface WorkerVersion {
  deploymentName: string;
  buildId: string;
}

export const DEFAULT_WORKER_DEPLOYMENT = 'metalflow';

/** Temporal's limit on a deployment name and a build id (matching's `maxIDLengthLimit` default is 1000; its own check is 255). */
const MAX_NAME = 255;

function checkName(name: string, value: string): string {
  if (value === '') throw new Error(`${name} must not be empty (unset it for the default)`);
  if (value.length > MAX_NAME) throw new Error(`${name} must be at most ${MAX_NAME} characters, got ${value.length}`);
  // Temporal takes a version string as "<deployment>:<build id>" (and "." before 1.28), and "__" is its reserved prefix.
  if (!/^[A-Za-z0-9][A-Za-z0-9_+.-]*$/.test(value) || value.startsWith('__')) {
    throw new Error(`${name} must start with a letter or digit and hold only letters, digits, "_", "-", "+" and ".", got "${value}"`);
  }
  return value;
}

/** package.json's version, with the git commit when the worker runs from a checkout ("0.1.0+3f2a9c1d4e5b"). */
export function defaultBuildId(repoRoot: string): string {
  const { version } = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string };
  try {
    const commit = execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'ignore'], timeout: 5000 })
      .toString()
      .trim();
    return /^[0-9a-f]+$/.test(commit) ? `${version}+${commit}` : version;
  } catch {
    // An image without git or without the .git folder: the version alone.
    return version;
  }
}

/** The worker's version, or undefined when METALFLOW_WORKER_VERSIONING=off (a server without Worker Deployments). */
export function loadWorkerVersion(env: NodeJS.ProcessEnv, repoRoot: string): WorkerVersion | undefined {
  const mode = env.METALFLOW_WORKER_VERSIONING ?? 'on';
  if (mode !== 'on' && mode !== 'off') throw new Error(`METALFLOW_WORKER_VERSIONING must be "on" or "off", got "${mode}"`);
  if (mode === 'off') return undefined;
  const deploymentName = checkName('METALFLOW_WORKER_DEPLOYMENT', env.METALFLOW_WORKER_DEPLOYMENT ?? DEFAULT_WORKER_DEPLOYMENT);
  if (deploymentName.includes('.') || deploymentName.includes(':')) {
    throw new Error(`METALFLOW_WORKER_DEPLOYMENT must not contain "." or ":" (Temporal separates deployment and build id with them), got "${deploymentName}"`);
  }
  const raw = env.METALFLOW_WORKER_BUILD_ID;
  const buildId = raw === undefined ? defaultBuildId(repoRoot) : checkName('METALFLOW_WORKER_BUILD_ID', raw);
  return { deploymentName, buildId };
}
