/**
 * Pausing a host (Metal3's `baremetalhost.metal3.io/paused`, the API's
 * `PUT …/paused`): the state change and its Event. While paused the host
 * workflow starts nothing, retries nothing and checks no power.
 */
import { ApplicationFailure } from '@temporalio/workflow';
import type { HostEvent } from '../../../model/host-event';
import { MAX_PAUSE_REASON, type HostState, type PauseRequest, type PauseResult } from '../../../contracts/host';

/** Update validator: rejects (nothing applied) a request whose reason is not a short string. */
export function checkPauseRequest(req: PauseRequest): void {
  const bad = (reason: string) => {
    const errors = [{ field: 'reason', reason }];
    throw ApplicationFailure.create({ type: 'InvalidRequest', message: `reason: ${reason}`, details: [errors] });
  };
  if (typeof req?.paused !== 'boolean') {
    throw ApplicationFailure.create({
      type: 'InvalidRequest',
      message: 'paused: must be true or false',
      details: [[{ field: 'paused', reason: 'must be true or false' }]],
    });
  }
  if (req.reason !== undefined && typeof req.reason !== 'string') bad('must be a string');
  if ((req.reason?.length ?? 0) > MAX_PAUSE_REASON) bad(`must be at most ${MAX_PAUSE_REASON} characters`);
}

export function applyPause(s: HostState, req: PauseRequest, at: string): { result: Omit<PauseResult, 'idle'>; events: HostEvent[] } {
  if (!req.paused) {
    if (!s.paused) return { result: { changed: false }, events: [] };
    s.paused = undefined;
    return { result: { changed: true }, events: [{ type: 'Normal', reason: 'Unpaused', message: 'the host is managed again' }] };
  }
  const reason = req.reason || 'paused';
  if (s.paused?.reason === reason) return { result: { paused: s.paused, changed: false }, events: [] };
  s.paused = { reason, since: s.paused?.since ?? at };
  const message = `paused (${reason}): no operation, retry or power check until unpaused`;
  return { result: { paused: s.paused, changed: true }, events: [{ type: 'Normal', reason: 'Paused', message }] };
}
