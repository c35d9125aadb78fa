/**
 * `npm run chaos -- --scenario site-move`: hosts moved between two sites
 * (docs/sites.md) while the central worker and both sites' workers are
 * SIGKILLed mid-move: the heavy-tier file test/integration/sites-move-chaos.test.ts
 * run with --hosts hosts, so the scenario and its checks are one (no deploy,
 * no power change, each node at the new site only, each verb once). It uses
 * the test stack on the TEST_* ports (its global setup starts it).
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from '../../config/env';
import type { ChaosOptions } from './options';

export async function runSiteMoveChaos(opts: ChaosOptions): Promise<number> {
  const env = { ...process.env, METALFLOW_TEST_HEAVY: '1', METALFLOW_SITE_MOVE_CHAOS_HOSTS: String(opts.hosts) };
  opts.log(`site-move scenario: ${opts.hosts} hosts moved between two sites; the central worker and both sites' workers SIGKILLed mid-move`);
  const vitest = join(REPO_ROOT, 'node_modules', '.bin', 'vitest');
  const child = spawn(vitest, ['run', '--project', 'suite', 'test/integration/sites-move-chaos.test.ts'], { cwd: REPO_ROOT, env, stdio: 'inherit' });
  return new Promise((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 2))));
}
