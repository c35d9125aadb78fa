/**
 * The heavy tier. `npm run test:heavy` sets METALFLOW_TEST_HEAVY=1 and runs the
 * full-size rounds (the chaos round, the benchmark's whole self-test, the
 * fleet rounds at 100-200 hosts); `make test` runs a small round of each so
 * every behaviour stays in the gate while the gate stays short.
 */
export const HEAVY = process.env.METALFLOW_TEST_HEAVY === '1';

/**
 * Files only the heavy tier runs: each is a second path through something `make test` already drives against
 * the same peer, or a measurement (docs/testing.md, "What runs in which tier"). `npm run test:heavy` names
 * each of them (test/unit/heavy-tier.test.ts checks it).
 */
export const HEAVY_ONLY_FILES: readonly string[] = [
  'test/bench/bench-tools.test.ts',
  'test/integration/ironic-db-loss.test.ts',
  'test/k8s/ironic-db-loss.test.ts',
  'test/k8s/pivot-restore.test.ts',
  'test/integration/image-stream-rss.test.ts',
  'test/integration/fleet-abort-teardown.test.ts',
  'test/integration/fleet-clean.test.ts',
  'test/integration/fleet-remediate.test.ts',
  'test/k8s/fleet-operations.test.ts',
  'test/agent/fake-agent-states.test.ts',
  'test/integration/fleet-waves.test.ts',
  'test/integration/status-without-kubernetes.test.ts',
  'test/k8s/takeover.test.ts',
  'test/integration/stale-activation.test.ts',
  'test/k8s/metal3-manifest-firmware.test.ts',
  'test/k8s/firmware-servicing.test.ts',
  'test/integration/pivot-api-mode.test.ts',
  'test/integration/eager-start.test.ts',
  'test/integration/temporal-multinode.test.ts',
  'test/integration/sites-move-chaos.test.ts',
];
