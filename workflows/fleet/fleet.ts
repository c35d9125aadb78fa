/**
 * One fleet operation (workflow id `fleet/<name>`): selects hosts once, then
 * hands each its change through its own host workflow, at most
 * `maxConcurrent` at a time, until every host has a result, the failure
 * budget is spent (`halted`) or it is cancelled. Pause, resume and cancel
 * are updates; progress is a query and a few search attributes. Its state
 * goes to a fresh run (continue-as-new) before the history grows long, hosts
 * in flight included, so thousands of hosts fit.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  allHandlersFinished,
  condition,
  continueAsNew,
  isCancellation,
  log,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import { formatFieldErrors } from '../../model/field-error';
import { firstPage, progressPage, progressTooLarge, boundedProgress } from '../../contracts/fleet-progress-page';
import { fleetUsesSites, validateFleetInput, type FleetInput } from '../../model/fleet';
import { SEARCH_ATTRIBUTES } from '../../model/search-attributes';
import {
  DEFAULT_FLEET_OPTIONS,
  cancelFleetUpdate,
  fleetProgressQuery,
  pauseFleetUpdate,
  resumeFleetUpdate,
  type FleetControlRequest,
  type FleetHost,
  type FleetOptions,
  type FleetProgress,
  type FleetState,
} from '../../contracts/fleet';
import { packFleetState, unpackFleetState, type PackedFleetState } from './carry';
import {
  SiteBudget,
  concurrencyLimit,
  countOutcomes,
  countsBySite,
  estimatedEnd,
  failureBudget,
  finished,
  mayStartMore,
  phaseOf,
  selectionSites,
  waveEnds,
} from '../../contracts/fleet-plan';
import type { FleetHostResult } from '../../contracts/fleet-goals';
import { abortFleetHost, fleetCalls, runFleetHost } from './host';
import { baseProgress, nextChange, outcomeBook, setControlHandlers } from '../common/run-controls';

/** Besides the input: what a previous run hands over, and tuning (tests shorten the poll window). */
export interface FleetCarry {
  /** The state packed: what 10,000 hosts need to fit in one payload. */
  packed?: PackedFleetState;
  options?: Partial<FleetOptions>;
}

const now = (): string => new Date().toISOString();

function checkAbort(req: FleetControlRequest): void {
  if (req?.abortInFlight !== undefined && typeof req.abortInFlight !== 'boolean') {
    throw ApplicationFailure.create({ type: 'InvalidRequest', message: 'abortInFlight: must be true or false', details: [[{ field: 'abortInFlight', reason: 'must be true or false' }]] });
  }
}

export async function fleetWorkflow(input: FleetInput, carry: FleetCarry = {}): Promise<FleetProgress> {
  const carried = carry.packed ? unpackFleetState(carry.packed) : undefined;
  if (!carried) {
    // A `temporal workflow start` input is checked like the API's body: a bad one fails at once, naming the field.
    const valid = validateFleetInput(input);
    if (!valid.ok) {
      throw ApplicationFailure.create({ type: 'InvalidFleetInput', nonRetryable: true, message: formatFieldErrors(valid.errors), details: [valid.errors] });
    }
  }
  const options: FleetOptions = { ...DEFAULT_FLEET_OPTIONS, ...carry.options };
  const s: FleetState = carried ?? { hosts: [], runs: 0 };
  s.runs += 1;
  const dryRun = input.dryRun === true;
  let counts = countOutcomes(s.hosts);
  let limit = 1;
  let budget = 0;
  let done = false;
  /** Where each wave ends (an index into s.hosts); one wave without `waves`. */
  let ends: number[] = [];
  const perSite = input.maxConcurrentPerSite;
  const bySite = fleetUsesSites(input);
  /** Each host's site, by index (with `bySite`), and which host starts next under each site's cap. */
  let sites: string[] = [];
  let order: SiteBudget | undefined;
  /** Bumped on every change the main loop must notice. */
  let changes = 0;

  const progress = (): FleetProgress => ({
    name: input.name,
    input,
    phase: phaseOf(s, dryRun, done),
    ...baseProgress(s, counts, { maxConcurrent: limit, maxFailures: budget, ...(perSite !== undefined ? { maxConcurrentPerSite: perSite } : {}) }),
    ...(bySite && s.selection ? { sites: countsBySite(s.hosts, sites) } : {}),
    failures: s.hosts.filter((h) => h.outcome === 'failed').map((h) => ({ ref: h.ref, error: h.error ?? '' })),
    ...(input.waves && ends.length > 0 ? { wave: waveProgress() } : {}),
    ...(done ? {} : { estimatedEnd: estimatedEnd(s, counts, order ? order.concurrency(s.hosts, limit) : limit, Date.now()) }),
  });

  function waveProgress() {
    const i = s.wave ?? 0;
    return { current: i + 1, count: ends.length, first: i === 0 ? 0 : ends[i - 1]!, end: ends[i]! };
  }

  let published: string | undefined;
  const publish = (): void => {
    const pairs: Extract<Parameters<typeof upsertSearchAttributes>[0], unknown[]> = [
      { key: SEARCH_ATTRIBUTES.fleetOperation, value: input.operation.kind },
      { key: SEARCH_ATTRIBUTES.fleetPhase, value: phaseOf(s, dryRun, done) },
      { key: SEARCH_ATTRIBUTES.fleetSucceeded, value: counts.succeeded },
      { key: SEARCH_ATTRIBUTES.fleetFailed, value: counts.failed },
    ];
    const fingerprint = JSON.stringify(pairs);
    if (fingerprint === published) return;
    published = fingerprint;
    upsertSearchAttributes(pairs);
  };

  const book = outcomeBook<FleetHost>(s, () => counts, () => budget, () => (changes += 1));
  const setOutcome = book.setOutcome;
  const settle = (h: FleetHost, result: FleetHostResult): void => {
    if (!book.settle(h, result)) return;
    if (result.outcome === 'failed') log.warn(`fleet ${input.name}: ${h.ref.namespace}/${h.ref.name} failed: ${result.error}`);
    publish();
  };

  /**
   * What an update or the run's end answers. A progress too large for one payload in history
   * (over 1 MB: some 3,000 hosts) is its first page: the server refuses a larger result.
   */
  const answer = (): FleetProgress => {
    const p = progress();
    return progressTooLarge(p, options.progressLimitBytes) ? firstPage(p, options.progressLimitBytes) : p;
  };

  setHandler(fleetProgressQuery, (page) => (page ? progressPage(progress(), page) : boundedProgress(progress(), options.progressLimitBytes)));
  setControlHandlers({ pause: pauseFleetUpdate, resume: resumeFleetUpdate, cancel: cancelFleetUpdate }, s, {
    progress: answer,
    changed: () => {
      changes += 1;
      publish();
    },
    ended: () => (done ? `fleet operation ${input.name} has ended (${phaseOf(s, dryRun, done)})` : undefined),
    // A second cancel may still ask to stop the hosts in flight.
    onCancel: (req) => {
      if (req?.abortInFlight === true) s.cancelled!.abortInFlight = true;
    },
    checkCancel: checkAbort,
  });

  publish();
  if (!s.selection) {
    s.selection = await select();
    s.hosts = s.selection.hosts.map((h) => ({ ref: h.ref, outcome: 'pending' }));
    counts = countOutcomes(s.hosts);
  }
  sites = selectionSites(s.selection, s.hosts.length);
  order = new SiteBudget(s.hosts, sites, perSite);
  limit = concurrencyLimit(input.maxConcurrent, s.hosts.length, perSite);
  budget = failureBudget(input.maxFailures, s.hosts.length);
  ends = waveEnds(input.waves, s.hosts.length);
  if (dryRun) return finish();

  /** Each host's wait, so that an abort can stop it (not carried: a new run starts them again). */
  const scopes = new Map<FleetHost, CancellationScope>();
  const launch = (h: FleetHost): void => {
    if (h.outcome === 'pending') {
      h.startedAt = now();
      setOutcome(h, 'inFlight');
    }
    const drive = (): Promise<void> => (h.aborting ? abortFleetHost(h, input, s.cancelled?.reason, settle) : runFleetHost(h, input, options, settle));
    const scope = new CancellationScope();
    scopes.set(h, scope);
    void scope.run(drive).catch((err: unknown) => {
      if (!isCancellation(err)) throw err;
    });
  };

  /** The wave is over (none of its hosts pending or in flight): the next one may start, or the run pauses first. */
  const nextWave = (): boolean => {
    const wave = s.wave ?? 0;
    if (wave + 1 >= ends.length || counts.inFlight > 0 || s.halted || s.cancelled) return false;
    if (s.hosts.slice(0, ends[wave]).some((h) => h.outcome === 'pending')) return false;
    s.wave = wave + 1;
    if (input.pauseAfterWave && !s.paused) s.paused = { reason: `wave ${wave + 1} of ${ends.length} done: resume to start wave ${wave + 2}`, since: now() };
    changes += 1;
    return true;
  };

  /** cancel with abortInFlight: each host in flight stops waiting and is stopped through its own workflow. */
  const abortInFlight = (): void => {
    if (!s.cancelled?.abortInFlight) return;
    for (const h of s.hosts) {
      if (h.outcome !== 'inFlight' || h.aborting) continue;
      h.aborting = true;
      scopes.get(h)?.cancel();
      launch(h);
    }
  };

  try {
    // Hosts a previous run had in flight go on where they were (a change already sent is not sent again).
    for (const h of s.hosts) if (h.outcome === 'inFlight') launch(h);
    for (;;) {
      if (finished(s, counts)) break;
      while (mayStartMore(s, counts, limit)) {
        // Only hosts of the wave under way (hosts start in order, so the wave's are before its end), and of a site below its cap.
        const next = order.next(s.hosts, ends[s.wave ?? 0]!);
        if (next === undefined) break;
        launch(s.hosts[next]!);
        order.started(next);
      }
      abortInFlight();
      if (nextWave()) continue;
      publish();
      if (await nextChange(() => changes, options.maxHistoryEvents, true)) return await continueAsNew<typeof fleetWorkflow>(input, handOver());
    }
  } catch (err) {
    if (!isCancellation(err)) throw err;
    // Cancelled from Temporal (the UI, `temporal workflow cancel`): the same as the cancel update, then the run ends cancelled.
    s.cancelled ??= { reason: 'the workflow was cancelled', at: now() };
    for (const h of s.hosts) {
      if (h.outcome !== 'inFlight') continue;
      h.reason = 'the fleet operation was cancelled before the host finished';
      setOutcome(h, 'skipped');
    }
    await CancellationScope.nonCancellable(() => finish());
    throw err;
  }
  return finish();

  /** The selection; a site the worker's configuration does not know fails the run as a bad input would. */
  async function select() {
    try {
      return await fleetCalls.selectFleetHosts(input.selector, { sites: bySite, ...(input.operation.kind === 'moveSite' ? { operation: input.operation } : {}) });
    } catch (err) {
      const cause = err instanceof ActivityFailure ? err.cause : undefined;
      if (cause instanceof ApplicationFailure && cause.type === 'InvalidFleetInput') {
        throw ApplicationFailure.create({ type: 'InvalidFleetInput', nonRetryable: true, message: cause.message, details: cause.details ?? undefined });
      }
      throw err;
    }
  }

  /** The next run's carry: the state packed. */
  function handOver(): FleetCarry {
    const { options: tuning } = carry;
    return { ...(tuning ? { options: tuning } : {}), packed: packFleetState(s) };
  }

  async function finish(): Promise<FleetProgress> {
    if (s.cancelled && input.operation.kind === 'powerOff') {
      // A cancelled powerOff lets its hosts power on again: its holds go.
      const refs = s.hosts.filter((h) => h.startedAt !== undefined).map((h) => h.ref);
      if (refs.length > 0) await fleetCalls.releaseFleetHolds({ refs, fleet: input.name });
    }
    if (!dryRun) for (const h of s.hosts) if (h.outcome === 'pending') setOutcome(h, 'notStarted');
    done = true;
    publish();
    await condition(allHandlersFinished);
    return answer();
  }
}
