/**
 * The changes to the host's state that a decision brings besides its
 * operation, each in one place: the state entered, a failure recorded without
 * an operation, what is recorded as an operation starts, why settings wait.
 * Each changes the state synchronously and returns the Event for the caller to
 * tell: an extra await would reorder the workflow's commands against update
 * completions, so the host workflow awaits exactly one `sync` per Event.
 */
import { log } from '@temporalio/workflow';
import type { ErrorType, ProvisioningState } from '../../model/host';
import type { HostEvent } from '../../model/host-event';
import type { HostState } from '../../contracts/host';
import { recordAttempt } from './rules/provisioning-retries';
import { now, type HostContext } from './context';
import type { Decision } from './decide';

export type OperationDecision = Extract<Decision, { kind: 'operation' }>;

/** Moves the host to `state`; the Event telling it, when it was elsewhere. */
export function enterState(ctx: HostContext, state: ProvisioningState): HostEvent | undefined {
  const before = ctx.s.status.provisioning.state;
  ctx.setState(state);
  // A new host has no state yet; "unmanaged" is a state of its own (a host without a BMC).
  return before === state ? undefined : { type: 'Normal', reason: 'StateChanged', message: `provisioning state ${before || 'none'} → ${state}` };
}

/** An error recorded without running anything (BMO's recordActionFailure): the provisioning retry limit. */
export function recordFailure(s: HostState, errorType: ErrorType, message: string): HostEvent {
  Object.assign(s.status, { errorType, errorMessage: message, operationalStatus: 'error', lastUpdated: now() });
  s.status.errorCount += 1;
  return { type: 'Warning', reason: 'ProvisioningError', message };
}

/** What the decision records before its operation runs; the Event telling a delete step given up. */
export function beginOperation(s: HostState, d: OperationDecision): HostEvent | undefined {
  if (d.recordImage) s.status.provisioning.image = d.recordImage;
  if (d.failedDeploy) s.status.provisioningFailCount = (s.status.provisioningFailCount ?? 0) + 1;
  if (d.recordAttempt) recordAttempt(s);
  if (!d.gaveUp) return undefined;
  log.warn(d.gaveUp.message);
  return { type: 'Warning', reason: d.gaveUp.reason, message: d.gaveUp.message };
}

/** Records why settings wait; the Event to tell, once per reason (none when nothing waits any more). */
export function settingsHeldEvent(s: HostState, held: string | undefined): HostEvent | undefined {
  if (held === undefined) {
    delete s.heldTold;
    return undefined;
  }
  s.heldTold = held;
  return { type: 'Normal', reason: 'SettingsHeld', message: held };
}
