/**
 * One pivot (workflow id `pivot/<name>`): moves the selected BareMetalHosts
 * from a source management plane to a target one, each host through its own
 * steps (workflows/pivot/host.ts), at most `maxConcurrent` at a time, until
 * every host has a result, the failure budget is spent (`halted`) or it is
 * cancelled. Selection, limits, the budget and the phases are the fleet
 * operation's (contracts/fleet-plan.ts); pause, resume and cancel are
 * updates; progress is a query. Decisions only: every read and write of a
 * cluster is an activity (activities/pivot-*.ts).
 */
import { ApplicationFailure, CancellationScope, allHandlersFinished, condition, continueAsNew, isCancellation, log, setHandler } from '@temporalio/workflow';
import { formatFieldErrors } from '../../model/field-error';
import { validatePivotInput, type PivotInput } from '../../model/pivot';
import { concurrencyLimit, countOutcomes, failureBudget, finished, mayStartMore, phaseOf } from '../../contracts/fleet-plan';
import type { FleetHostResult } from '../../contracts/fleet-goals';
import { baseProgress, nextChange, outcomeBook, setControlHandlers } from '../common/run-controls';
import {
  DEFAULT_PIVOT_OPTIONS,
  cancelPivotUpdate,
  pausePivotUpdate,
  pivotProgressQuery,
  resumePivotUpdate,
  type PivotHost,
  type PivotOptions,
  type PivotProgress,
  type PivotState,
  type PivotStep,
} from '../../contracts/pivot';
import { pivotCalls, rollBackHost, runPivotHost } from './host';

export interface PivotCarry {
  state?: PivotState;
  options?: Partial<PivotOptions>;
}

const now = (): string => new Date().toISOString();

export async function pivotWorkflow(input: PivotInput, carry: PivotCarry = {}): Promise<PivotProgress> {
  if (!carry.state) {
    const valid = validatePivotInput(input);
    if (!valid.ok) throw ApplicationFailure.create({ type: 'InvalidPivotInput', nonRetryable: true, message: formatFieldErrors(valid.errors), details: [valid.errors] });
  }
  const options: PivotOptions = { ...DEFAULT_PIVOT_OPTIONS, ...carry.options };
  const s: PivotState = carry.state ?? { hosts: [], runs: 0 };
  s.runs += 1;
  const dryRun = input.dryRun === true;
  let counts = countOutcomes(s.hosts);
  let limit = 1;
  let budget = 0;
  let done = false;
  let changes = 0;

  const progress = (): PivotProgress => ({
    name: input.name,
    input,
    phase: phaseOf(s, dryRun, done),
    ...baseProgress(s, counts, { maxConcurrent: limit, maxFailures: budget }),
    failures: s.hosts.filter((h) => h.outcome === 'failed').map((h) => ({ ref: h.ref, error: h.error ?? '', rolledBack: h.rolledBack === true })),
  });

  const book = outcomeBook<PivotHost>(s, () => counts, () => budget, () => (changes += 1));
  const setOutcome = book.setOutcome;
  const step = (h: PivotHost, to: PivotStep): void => {
    h.step = to;
    changes += 1;
  };
  const settle = (h: PivotHost, result: FleetHostResult): void => {
    if (book.settle(h, result) && result.outcome === 'failed') log.warn(`pivot ${input.name}: ${h.ref.namespace}/${h.ref.name} failed: ${result.error}`);
  };

  setHandler(pivotProgressQuery, progress);
  setControlHandlers({ pause: pausePivotUpdate, resume: resumePivotUpdate, cancel: cancelPivotUpdate }, s, {
    progress,
    changed: () => (changes += 1),
    ended: () => (done ? `pivot ${input.name} has ended (${phaseOf(s, dryRun, done)})` : undefined),
  });

  if (!s.selection) {
    s.selection = await pivotCalls.selectPivotHosts({ source: input.source, selector: input.selector });
    s.hosts = s.selection.hosts.map((h) => ({ ref: h.ref, outcome: 'pending' }));
    counts = countOutcomes(s.hosts);
  }
  limit = concurrencyLimit(input.maxConcurrent, s.hosts.length);
  budget = failureBudget(input.maxFailures, s.hosts.length);

  const launch = (h: PivotHost): void => {
    if (h.outcome === 'pending') {
      h.startedAt = now();
      setOutcome(h, 'inFlight');
    }
    void (dryRun ? precheckOnly(h) : runPivotHost(h, input, options, step, settle)).catch((err: unknown) => {
      if (!isCancellation(err)) throw err;
    });
  };
  const precheckOnly = async (h: PivotHost): Promise<void> => {
    const checked = await pivotCalls.precheckPivotHost({ pivot: input.name, ref: h.ref, source: input.source, target: input.target });
    settle(h, 'skip' in checked ? { outcome: 'skipped', reason: checked.skip } : { outcome: 'succeeded' });
  };

  try {
    for (const h of s.hosts) if (h.outcome === 'inFlight') launch(h);
    let cursor = 0;
    for (;;) {
      if (finished(s, counts)) break;
      while (mayStartMore(s, counts, limit)) {
        while (s.hosts[cursor]!.outcome !== 'pending') cursor += 1;
        launch(s.hosts[cursor]!);
      }
      if (await nextChange(() => changes, options.maxHistoryEvents)) return await continueAsNew<typeof pivotWorkflow>(input, { ...carry, state: s });
    }
  } catch (err) {
    if (!isCancellation(err)) throw err;
    // Cancelled from Temporal: a host not yet handed over goes back to the source; one handed over is the target's.
    s.cancelled ??= { reason: 'the workflow was cancelled', at: now() };
    await CancellationScope.nonCancellable(async () => {
      await Promise.all(
        s.hosts
          .filter((h) => h.outcome === 'inFlight')
          .map(async (h) => {
            if (['freeze', 'export', 'import', 'rollback'].includes(h.step ?? '')) {
              await rollBackHost(h, { pivot: input.name, ref: h.ref, source: input.source, target: input.target }, 'the pivot was cancelled', step, settle, true);
            } else {
              h.reason = `the pivot was cancelled at step ${h.step ?? 'precheck'}`;
              setOutcome(h, 'skipped');
            }
          }),
      );
      await finish();
    });
    throw err;
  }
  return finish();

  async function finish(): Promise<PivotProgress> {
    for (const h of s.hosts) if (h.outcome === 'pending') setOutcome(h, 'notStarted');
    done = true;
    await condition(allHandlersFinished);
    return progress();
  }
}
