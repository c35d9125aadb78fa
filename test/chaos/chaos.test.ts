/**
 * The chaos suite's rounds, on a chaos stack of its own (Temporal, Ironic and
 * sushy are killed and emptied, so not the test stack) and the test
 * kube-apiserver; one fault of each kind at the points a fixed seed places
 * them, and every check must hold.
 * - `METALFLOW_CHAOS_ROUND=1` (not `make test`: its crash windows are deterministic tests there): 4 hosts (two through the HTTP API, two through the CRD shim;
 *   one of each a direct live-ISO host on sushy), shorter faults (BMCs silent
 *   5-10 s, restarts after 1-3 s): every kind still strikes hosts mid-step.
 *   Its time goes to the recoveries (an Ironic restarted empty, Temporal
 *   restarted), not to the hosts: 4 hosts instead of 8 saves CPU, not minutes.
 * - `npm run test:heavy`: 8 hosts (two of them direct), and the malformed-input
 *   corpus sent to the same API afterwards must be refused field by field with
 *   nothing changed (`make test` sends the corpus in test/e2e/malformed-input.test.ts).
 * Unanswered Ironic requests are held 3 s here instead of past the client's
 * 30 s timeout (the caller sees a dropped connection instead of its own
 * timeout); `npm run chaos` holds them 35 s. It runs alone, after every other
 * file (vitest.config.ts): it kills processes and loads both cores.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultOptions } from '../../bench/chaos/options';
import { runChaos } from '../../bench/chaos/run';
import type { ChaosResult } from '../../bench/chaos/report';
import { REPO_ROOT } from '../../config/env';
import { WORKFLOW_BUNDLE_PATH } from '../support/env';
import { HEAVY } from '../support/heavy';
import { KUBE_BUILD_TIMEOUT_MS, KUBECONFIG, useKube, type KubeLease } from '../k8s/kube-harness';

/** Seed of the round; `npm run chaos -- --seed 20261123 --hosts 8 --faults-per-kind 1 …` replays the heavy round's plan. */
const SEED = 20261123;
const ROUND = HEAVY
  ? { hosts: 8, pauseSeconds: [1, 5] as [number, number], blackholeSeconds: [10, 20] as [number, number] }
  : { hosts: 4, pauseSeconds: [1, 3] as [number, number], blackholeSeconds: [5, 10] as [number, number] };
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
        hosts: ROUND.hosts,
        mode: 'both',
        bmcHosts: 2,
        faultsPerKind: 1,
        pauseSeconds: ROUND.pauseSeconds,
        blackholeSeconds: ROUND.blackholeSeconds,
        noAnswerMs: 3000,
        stepTimeoutSeconds: 300,
        malformedCorpus: HEAVY,
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
    // The malformed-input corpus, sent to the same API after the faults (heavy round; test/e2e/malformed-input.test.ts sends it in every run).
    if (HEAVY) {
      const m = result.malformedInputs!;
      expect(m.failures).toEqual([]);
      expect(m.sent).toBeGreaterThanOrEqual(100);
      expect(m.rejectedWithFieldError).toBe(m.sent);
      expect(m.changedAnything).toBe(0);
    } else {
      expect(result.malformedInputs).toBeUndefined();
    }
    expect(result.passed).toBe(true);
  }, 1_500_000);
});
