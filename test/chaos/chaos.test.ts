/**
 * The chaos suite's small round in `make test`: 8 hosts (half through the
 * HTTP API, half through the CRD shim; two of them direct live-ISO hosts on
 * sushy), one fault of each kind at the points a fixed seed places them, on
 * a chaos stack of its own (Temporal, Ironic and sushy are killed and
 * emptied, so not the test stack) and the test kube-apiserver. Every check
 * must hold, and the malformed-input corpus sent to the same API afterwards
 * must be refused field by field with nothing changed. Unanswered Ironic requests are held 3 s here instead of past the
 * client's 30 s timeout (the caller sees a dropped connection instead of its
 * own timeout) to keep the round to a few minutes; `npm run chaos` holds them
 * 35 s. It runs alone, after every other file (vitest.config.ts): it kills
 * processes and loads both cores.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultOptions } from '../../bench/chaos/options';
import { runChaos } from '../../bench/chaos/run';
import type { ChaosResult } from '../../bench/chaos/report';
import { REPO_ROOT } from '../../config/env';
import { WORKFLOW_BUNDLE_PATH } from '../support/env';
import { KUBE_BUILD_TIMEOUT_MS, KUBECONFIG, useKube, type KubeLease } from '../k8s/kube-harness';

/** Seed of the round; `npm run chaos -- --seed 20261123 --hosts 8 --faults-per-kind 1 …` replays the plan. */
const SEED = 20261123;
let kube: KubeLease | undefined;

beforeAll(() => {
  kube = useKube();
}, KUBE_BUILD_TIMEOUT_MS);
afterAll(() => kube?.release());

describe('a small chaos round', () => {
  it('loses no host, leaves none stuck, sends no deploy or reboot twice, re-provisions nothing and leaks no secret', async () => {
    const result: ChaosResult = await runChaos(
      defaultOptions({
        seed: SEED,
        hosts: 8,
        mode: 'both',
        bmcHosts: 2,
        faultsPerKind: 1,
        pauseSeconds: [1, 5],
        blackholeSeconds: [10, 20],
        noAnswerMs: 3000,
        stepTimeoutSeconds: 300,
        portBase: Number(process.env.METALFLOW_CHAOS_TEST_PORT_BASE ?? 22500),
        stateDir: join(REPO_ROOT, '.state', 'chaos-test-stack'),
        kubeconfig: KUBECONFIG,
        workflowBundle: WORKFLOW_BUNDLE_PATH,
        keepStack: process.env.METALFLOW_KEEP_TEST_STACK === '1',
        out: join(REPO_ROOT, 'test-results', 'chaos-round.json'),
      }),
    );
    // Every kind happened (the controller and the BMCs too: both modes, two direct hosts).
    expect(result.faults.filter((f) => f.startedAt === undefined || f.error).map((f) => `${f.kind}: ${f.error ?? f.detail}`)).toEqual([]);
    expect(new Set(result.faults.map((f) => f.kind))).toEqual(new Set(['worker', 'api', 'controller', 'temporal', 'ironic', 'ironic-empty-db', 'bmc']));
    expect(Object.keys(result.ironicProxy.injected).length).toBeGreaterThan(0);
    const c = result.checks;
    expect(c.lost).toEqual([]);
    expect(c.stuck).toEqual([]);
    expect(c.deploys.twice).toEqual([]);
    expect(c.deploys.missing).toEqual([]);
    expect(c.reboots.twice).toEqual([]);
    expect(c.reboots.missing).toEqual([]);
    expect(c.reprovisioned).toEqual([]);
    expect(c.secrets).toEqual([]);
    // The malformed-input corpus, sent to the same API after the faults.
    const m = result.malformedInputs!;
    expect(m.failures).toEqual([]);
    expect(m.sent).toBeGreaterThanOrEqual(100);
    expect(m.rejectedWithFieldError).toBe(m.sent);
    expect(m.changedAnything).toBe(0);
    expect(result.passed).toBe(true);
  }, 1_500_000);
});
