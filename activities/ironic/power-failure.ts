/**
 * Whether a power change metalflow sent failed, told apart from an older
 * `last_error` the node still carries. Ironic keeps a node's `last_error`
 * through a power change in a failed provision state (`deploy failed`,
 * `inspect failed`, `clean failed`, …: conductor utils node_power_action clears
 * it only outside them), and only its power sync clears it later, and only with
 * `[conductor] node_history` on (manager.py do_sync_power_state). Metal3's
 * ironic-image turns node history off, so there the failure that put the node
 * in that state stays in `last_error` for good: read as the power change's own
 * error, a power on that worked was reported failed, and a soft power off that
 * worked was followed by a hard one.
 */
import type { IronicNode } from '../../clients/ironic/types';

/** What the judge needs of the node as read just before the change was sent (kept in the heartbeat details). */
export interface PowerBefore {
  lastError: string | null;
  /** Ironic's `driver_internal_info.last_power_state_change`: stamped when a power change starts. */
  changedAt: string | null;
}

const lastPowerChange = (node: IronicNode): string | null => {
  const at = node.driver_internal_info?.last_power_state_change;
  return typeof at === 'string' ? at : null;
};

export const powerBefore = (node: IronicNode): PowerBefore => ({ lastError: node.last_error ?? null, changedAt: lastPowerChange(node) });

/** The power state a change ends in: Ironic's own target for it (conductor utils _calculate_target_state). */
export const powerTargetOf = (change: string): 'power on' | 'power off' => (change === 'power off' || change === 'soft power off' ? 'power off' : 'power on');

/**
 * The error of a power change toward `target` that Ironic tried and gave up on, or undefined: none yet (still
 * pending, not started) or the node's `last_error` is older than the change. Ironic words its own failure
 * "Failed to change power state to '<target>'…" (node_power_action); an error that the node held before the
 * change was sent (`before`, when known) counts only if Ironic stamped a power change since.
 */
export function powerChangeFailure(node: IronicNode, target: 'power on' | 'power off', before: PowerBefore | undefined): string | undefined {
  const error = node.last_error;
  if (node.target_power_state || !error) return undefined;
  if (!before) return error.startsWith(`Failed to change power state to '${target}'`) ? error : undefined;
  const moved = lastPowerChange(node) !== before.changedAt;
  if (error === before.lastError && !moved) return undefined;
  // A new error after a power change started, in Ironic's words or not (a translated Ironic), is the change's.
  return error.startsWith('Failed to change power state') || (moved && error !== before.lastError) ? error : undefined;
}

/** Heartbeat details' record of `before`, read back on a retry (undefined when absent or malformed). */
export function readPowerBefore(value: unknown): PowerBefore | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { lastError, changedAt } = value as Record<string, unknown>;
  const ok = (v: unknown): v is string | null => v === null || typeof v === 'string';
  return ok(lastError) && ok(changedAt) ? { lastError, changedAt } : undefined;
}
