/**
 * `clusterctl move` compatibility, as Metal3 behaves: a host in the middle of
 * an operation carries `clusterctl.cluster.x-k8s.io/block-move` (clusterctl
 * waits until no object carries it), and a host paused for a move (CAPM3's
 * pause value, or a metalflow pivot's) carries its status in
 * `baremetalhost.metal3.io/status`, which the target's controller restores.
 * Pure: says which annotations to change, or nothing. Here, not in the
 * controller, because the worker's status writer sets and lifts the
 * block-move itself right after the status write that makes it due
 * (activities/kubernetes/host-status.ts): it knows the object's version from
 * its write's answer, so neither its next status write nor the controller
 * has to read the object again.
 */
import type { HostStatus } from './host';
import { ANNOTATIONS } from './metal3-annotations';

export const BLOCK_MOVE = 'clusterctl.cluster.x-k8s.io/block-move';
export const STATUS_ANNOTATION = ANNOTATIONS.status;
/** The pause CAPM3 sets on its hosts when clusterctl pauses the cluster for a move. */
export const CAPM3_PAUSE = 'metal3.io/capm3';
/** States a move may copy as they are: at rest, nothing running against the hardware. */
const AT_REST = new Set(['', 'unmanaged', 'available', 'provisioned', 'externally provisioned', 'registration error', 'inspection error', 'preparation error', 'provisioning error', 'power management error', 'detached']);

interface MovableHost {
  metadata: { annotations?: Record<string, string> };
  status?: Partial<HostStatus>;
}

/** Annotations to set (a string) or remove (null) so that the host says whether it may move; undefined: nothing to change. */
export function moveAnnotations(obj: MovableHost, pausedBy: string | undefined): Record<string, string | null> | undefined {
  const a = obj.metadata.annotations ?? {};
  const change: Record<string, string | null> = {};
  if (pausedBy === CAPM3_PAUSE || pausedBy?.startsWith('metalflow.io/pivot-')) {
    const status = obj.status?.provisioning ? JSON.stringify(obj.status) : undefined;
    if (status && a[STATUS_ANNOTATION] !== status) change[STATUS_ANNOTATION] = status;
  }
  const state = obj.status?.provisioning?.state ?? '';
  const busy = pausedBy === undefined && !AT_REST.has(state);
  if (busy && !(BLOCK_MOVE in a)) change[BLOCK_MOVE] = `host is ${state}`;
  if (!busy && a[BLOCK_MOVE]?.startsWith('host is ')) change[BLOCK_MOVE] = null;
  return Object.keys(change).length > 0 ? change : undefined;
}

/** The block-move change alone for a host that is not paused (a paused one's annotations are the controller's to write). */
export function blockMoveChange(obj: MovableHost): Record<string, string | null> | undefined {
  return moveAnnotations(obj, undefined);
}
