/**
 * Workflow versions of the host workflow. Each patched() id costs its first
 * caller two history events (the marker and the TemporalChangeVersion search
 * attribute), so the host workflow asks one era patch first thing in a run
 * (`startHostRun`) and takes every patch before it without a marker: a run
 * that recorded the era's marker was written by code that had all of them.
 *
 * Eras, newest first:
 * - `bounded-history` (asked before power-signal and implying it): the run
 *   also hands over by the bytes of history it counted itself
 *   (history-count.ts), with the server's size and its continue-as-new
 *   suggestion as backstops (host-context.ts); a status write that cannot
 *   finish is handed to the next run instead of holding the hand-over, and
 *   one that ran out of attempts is tried again after a pause
 *   (host-status-publish.ts). A run of an older era keeps waiting for its
 *   write at a hand-over; the write's capped attempts end that wait.
 * - `power-signal` (asked before fire-fence and implying it, so a new run pays
 *   for no more markers than before): the host takes the power sentinel's
 *   `powerChanged` signal as a reason to check its power at the next idle pass,
 *   and a host on an Ironic node checks every `watchedPowerCheckSeconds`
 *   (power-check.ts). A run of an older era ignores the signal (its history
 *   could hold one that its code never acted on).
 * - `fire-fence` (asked before counted-history and implying it): after its
 *   timer fires, the idle wait first runs a local activity and starts the next
 *   period's timer only after the checks (idle-wait.ts); its count of history
 *   events takes a timer's when it fires (history-count.ts).
 * - `counted-history` (asked before idle-by-fire and implying it, so a new run
 *   still pays for one marker beside fewer-events'): the run decides its
 *   hand-over from the history events it counted itself (history-count.ts),
 *   not from workflowInfo().historyLength.
 * - `idle-by-fire` (asked beside the others, so a run keeps the idle wait it
 *   started with): the idle wait's checks follow its timer's fire, not the
 *   clock (idle-wait.ts). Independent of the eras below.
 * - `fewer-events`: every patch below, and every patch asked through
 *   sinceInline(); the provisioning permit is asked by a local activity
 *   (host-permit.ts). A new host pays for this one marker only.
 * - `operations-inline`: operations run inside the host workflow; the patches
 *   asked through since() are implied. A run of this era (its history has
 *   operations-inline's marker first) asks each sinceInline() patch itself,
 *   as it did, until it continues as new.
 * - neither: a run from before operations-inline keeps its child workflows
 *   and asks every patch itself.
 *
 * Patches added after fewer-events use patched() as usual. Module state is
 * per workflow execution in the SDK's sandbox (preloaded modules aside, each
 * workflow evaluates its own copy); workflows other than the host workflow
 * (operation children included) never call startHostRun, so both helpers
 * ask patched() there as before.
 */
import { patched } from '@temporalio/workflow';
import { operationLabel } from './operation-label';
import { countEvents, countTimersOnFire, sizeOf } from './history-count';

let inlineEra = false;
let fewerEventsEra = false;
let idleByFireEra = false;
let countedHistoryEra = false;
let fireFenceEra = false;
let powerSignalEra = false;
let historyBytesEra = false;
/** The size of the run's input (the state handed over), for the server's size backstop. */
let inputBytes = 0;

/** A patch's marker and its TemporalChangeVersion search attribute. */
const PATCH_EVENTS = 2;

/**
 * Called first in every host workflow run, before anything else can ask for a patch. A run
 * that began before fewer-events replays its first workflow task without the marker, so the
 * answer is false there and it asks operations-inline as it did.
 */
export function startHostRun(input: unknown): void {
  fewerEventsEra = patched('fewer-events');
  inlineEra = fewerEventsEra || patched('operations-inline');
  historyBytesEra = patched('bounded-history');
  if (historyBytesEra) inputBytes = sizeOf(input);
  powerSignalEra = historyBytesEra || patched('power-signal');
  fireFenceEra = powerSignalEra || patched('fire-fence');
  if (fireFenceEra) countTimersOnFire();
  countedHistoryEra = fireFenceEra || patched('counted-history');
  // Counted only in the era that reads the count (the eras it implies add no marker of their own).
  if (countedHistoryEra) countEvents(2 * PATCH_EVENTS);
  idleByFireEra = countedHistoryEra || patched('idle-by-fire');
}

/** The run also hands over by its own count of history bytes (patch bounded-history, host-context.ts). */
export const historyBytes = (): boolean => historyBytesEra;

/** The bytes of the run's input, counted in era bounded-history (0 otherwise). */
export const runInputBytes = (): number => inputBytes;

/**
 * A hand-over leaves an unfinished status write to the next run instead of waiting for it, and a
 * write that ran out of attempts is tried again after a pause (patch bounded-history, host-status-publish.ts).
 */
export const statusOutbox = (): boolean => historyBytesEra;

/** The run hands over by its own count of history events (patch counted-history, history-count.ts). */
export const countedHistory = (): boolean => countedHistoryEra;

/** The host acts on the power sentinel's signal and checks a watched node's power less often (patch power-signal). */
export const powerSignal = (): boolean => powerSignalEra;

/** After a fire the idle wait fences with a local activity and starts its next timer last (patch fire-fence, idle-wait.ts). */
export const fireFence = (): boolean => fireFenceEra;

/** The idle wait decides by its timer's fire (patch idle-by-fire, idle-wait.ts). */
export const idleByFire = (): boolean => idleByFireEra;

/** The run's operations run inside it (patch operations-inline, implied by fewer-events). */
export const operationsInline = (): boolean => inlineEra;

/** The run asks its provisioning permit by a local activity (patch fewer-events). */
export const fewerEvents = (): boolean => fewerEventsEra;

/** `patched(id)` for a patch older than operations-inline (in the host workflow, or in an operation running inside it). */
export const since = (id: string): boolean => inlineEra || operationLabel() !== undefined || patched(id);

/** `patched(id)` for a patch older than fewer-events that since() does not cover: no marker in a run of fewer-events. */
export const sinceInline = (id: string): boolean => fewerEventsEra || patched(id);

const markersCounted = new Set<string>();

/** `patched(id)` for a patch newer than the eras, asked in the host workflow: its marker is counted (history-count.ts). */
export function patchedCounted(id: string): boolean {
  const has = patched(id);
  if (has && !markersCounted.has(id)) {
    markersCounted.add(id);
    countEvents(PATCH_EVENTS);
  }
  return has;
}
