/**
 * `npm run chaos -- --scenario pivot`: the heavy round of the pivot under
 * SIGKILL. The two management planes (a second kube-apiserver, Ironic and
 * Temporal namespace, a worker and a controller each, recording proxies) are
 * the pivot tests' harness, so the round is the pivot-under-SIGKILL test of
 * test/k8s/pivot.test.ts run with more hosts and kills: one scenario, one set
 * of checks, two sizes. The whole file runs (its other pivot tests first):
 * plane B's controller holds its Lease in their namespace, which B has only
 * once their pivot imported it; with them filtered out it never gets one.
 * It uses the test stack on the TEST_* ports (its global setup starts it).
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from '../../config/env';
import type { ChaosOptions } from './options';

export async function runPivotChaos(opts: ChaosOptions): Promise<number> {
  const env = {
    ...process.env,
    METALFLOW_PIVOT_CHAOS_HOSTS: String(opts.hosts),
    METALFLOW_PIVOT_CHAOS_KILLS: String(opts.faultsPerKind),
    METALFLOW_PIVOT_KILL_SEED: String(opts.seed),
  };
  opts.log(`pivot scenario, seed ${opts.seed}: ${opts.hosts} hosts, ${opts.faultsPerKind} kill(s) of plane A's worker and of Ironic B`);
  const vitest = join(REPO_ROOT, 'node_modules', '.bin', 'vitest');
  const child = spawn(vitest, ['run', '--project', 'suite', 'test/k8s/pivot.test.ts'], { cwd: REPO_ROOT, env, stdio: 'inherit' });
  return new Promise((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 2))));
}
