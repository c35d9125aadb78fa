/**
 * Replays the baseline histories (test/fixtures/baseline, recorded by
 * test/support/record-baseline.ts) against the current workflow code, with no
 * server: a change to workflow logic that running hosts, fleets, pivots or
 * pools would fail on fails here. Such a change needs `patched()`
 * (docs/contributing.md, "Changing workflow code").
 *
 * Runs without the test stack: METALFLOW_TEST_NO_STACK=1 npx vitest run test/unit/replay-baseline.test.ts
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { DeterminismViolationError } from '@temporalio/workflow';
import { Worker } from '@temporalio/worker';
import { REPO_ROOT } from '../../config/env';
import { runTracedWorkflowBundle, runWorkflowBundle } from '../support/run-bundles';

const DIR = join(REPO_ROOT, 'test', 'fixtures', 'baseline');
const files = readdirSync(DIR).filter((f) => f.endsWith('.json')).sort();

/** Every workflow type the worker registers (workflows/index.ts) and each main path, by its fixture. */
const EXPECTED = [
  // hostWorkflow: the lifecycle, power checks and requests, the failure loop across a hand-over, a delete,
  // a manual clean, servicing, the direct provisioner, the sentinel's signal, a host that waited for a permit,
  // a host whose site was dark for a while (v0.1.0 sent its unstarted call again with a doubling limit).
  'host-lifecycle',
  'host-power',
  'host-failure-run1',
  'host-failure-run2',
  'host-delete-provisioned',
  'host-clean',
  'host-service',
  'host-direct',
  'host-power-signal',
  'host-limited',
  'host-site-dark',
  // A provisioned host moved between sites (hold, adopt, switch, release), then powered off and deleted at its new site.
  'host-site-move',
  'fleet-reboot-run1',
  'fleet-reboot-last',
  'pivot-source-refused',
  'pivot-a-to-b',
  'plane-check',
  'remediation-power-cycle',
  'ippool-lifecycle',
  'ippool-continued-run1',
  'provisioning-limiter',
  'power-sentinel',
  'firmware-inventory',
];

/**
 * Every fixture replayed by one replay worker per bundle (a worker per history cost some 0.5 CPU-s each, 25 s of
 * the file): what each history's replay found, by file. runReplayHistories parses the CLI's proto-JSON itself.
 */
type Found = Map<string, Error | undefined>;
const TAMPERED = 'tampered host-lifecycle';
/** The lifecycle with its first activity renamed, as if the code had changed under it: its replay must fail. */
function tampered(): unknown {
  const history = JSON.parse(readFileSync(join(DIR, 'host-lifecycle.json'), 'utf8')) as { events: { activityTaskScheduledEventAttributes?: { activityType: { name: string } } }[] };
  const scheduled = history.events.find((e) => e.activityTaskScheduledEventAttributes)!.activityTaskScheduledEventAttributes!;
  scheduled.activityType.name = `${scheduled.activityType.name}Renamed`;
  return history;
}

async function replayAll(code: string): Promise<Found> {
  const found: Found = new Map();
  const histories = files.map((file) => ({ workflowId: file, history: JSON.parse(readFileSync(join(DIR, file), 'utf8')) as unknown }));
  histories.push({ workflowId: TAMPERED, history: tampered() });
  for await (const r of Worker.runReplayHistories({ workflowBundle: { code }, replayName: 'baseline' }, histories)) found.set(r.workflowId, r.error);
  return found;
}

let plain: Found;
let traced: Found;
beforeAll(async () => {
  const [code, tracedCode] = await Promise.all([runWorkflowBundle(), runTracedWorkflowBundle()]);
  [plain, traced] = await Promise.all([replayAll(code), replayAll(tracedCode)]);
}, 180_000);

describe('replay of the baseline histories', () => {
  it('has a fixture for every workflow type and main path', () => {
    expect(files).toEqual(expect.arrayContaining(EXPECTED.map((f) => `${f}.json`)));
  });

  it('reports a history the code no longer matches (the batch replay finds what it should)', () => {
    expect(plain.get(TAMPERED)).toBeInstanceOf(DeterminismViolationError);
  });

  it.each(files)('%s replays without nondeterminism', (file) => {
    expect(plain.has(file)).toBe(true);
    expect(plain.get(file)).toBeUndefined();
  });
});

// Turning tracing on (METALFLOW_OTLP_ENDPOINT) adds Temporal's OpenTelemetry workflow interceptors to the bundle:
// runs recorded without them (every run of an untraced worker) must still replay on a traced worker.
describe('replay of the baseline histories on a traced worker', () => {
  it.each(files)('%s replays without nondeterminism', (file) => {
    expect(traced.has(file)).toBe(true);
    expect(traced.get(file)).toBeUndefined();
  });
});
