/**
 * Workflow versions of the host workflow. Patch `operations-inline` is taken
 * once, first thing in a run (`startHostRun`): from it on, operations run
 * inside the host workflow, and every patch before it is taken without a
 * marker of its own (a run that recorded operations-inline was written by
 * code that had all of them). Each patched() id costs its first caller two
 * history events (the marker and the TemporalChangeVersion search
 * attribute); a new host used to pay for seven of them.
 *
 * A run that started before operations-inline (its history has no marker
 * first) keeps its child workflows and asks each earlier patch itself, as it
 * did, until it continues as new. Patches added after operations-inline use
 * patched() as usual. Module state is per workflow execution in the SDK's
 * sandbox (preloaded modules aside, each workflow evaluates its own copy).
 */
import { patched } from '@temporalio/workflow';
import { operationLabel } from './operation-label';

let inlineEra = false;

/** Called first in every host workflow run, before anything else can ask for a patch. */
export function startHostRun(): void {
  inlineEra = patched('operations-inline');
}

/** The run's operations run inside it (patch operations-inline). */
export const operationsInline = (): boolean => inlineEra;

/** `patched(id)` for a patch older than operations-inline (in the host workflow, or in an operation running inside it). */
export const since = (id: string): boolean => inlineEra || operationLabel() !== undefined || patched(id);
