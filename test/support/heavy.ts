/**
 * The heavy tier. `npm run test:heavy` sets METALFLOW_TEST_HEAVY=1 and runs the
 * full-size rounds (the chaos round, the benchmark's whole self-test, the
 * fleet rounds at 100-200 hosts); `make test` runs a small round of each so
 * every behaviour stays in the gate while the gate stays short.
 */
export const HEAVY = process.env.METALFLOW_TEST_HEAVY === '1';
