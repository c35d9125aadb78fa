/**
 * When the host stops its running operation instead of waiting it out (a
 * stuck deploy could otherwise hold a delete for hours). Pure, like decide():
 * the operation is interrupted when what the host now wants is no longer it.
 */
import { decide } from './decide';
import { siteMoveInterrupt } from './rules/site';
import type { HostState, OperationKind } from '../../contracts/host';

/**
 * Operations that can stop half-way and be run again or undone. Registration,
 * deprovisioning, deletion and detach are the way back themselves: they finish.
 */
export const INTERRUPTIBLE: ReadonlySet<OperationKind> = new Set(['inspect', 'prepare', 'provision', 'power', 'reboot', 'clean', 'service', 'move']);

/** Why the running `op` should be cancelled now, or undefined while it is still what the host wants. */
export function interruptReason(s: HostState, op: OperationKind): string | undefined {
  if (!INTERRUPTIBLE.has(op)) return undefined;
  // A move stops only where it is withdrawn before its switch; a pause lets it end first, as a registration.
  if (op === 'move') return siteMoveInterrupt(s);
  if (s.paused) return `the host was paused (${s.paused.reason})`;
  const next = decide(s);
  if (next.kind === 'operation' && next.op === op) return undefined;
  // Bookkeeping of earlier outcomes is not a new wish: a delete that gave up cleaning up lets the step already
  // running (its power off) finish, and a failed deploy still on record does not cut short the attempt under way.
  if (next.kind === 'operation' && (next.gaveUp || next.failedDeploy)) return undefined;
  if (s.deleteRequested) return 'the host is being deleted';
  if (s.directives?.detached && !s.detached) return 'the host is being detached';
  if (op === 'clean' && !s.cleanRequest) return 'the clean request was withdrawn';
  if (op === 'service' && !s.updatePolicy) return 'the HostUpdatePolicy was removed';
  // A new power request queues behind the running power change rather than cutting it short.
  if (op === 'power' || op === 'reboot') return undefined;
  return 'the desired state changed';
}
