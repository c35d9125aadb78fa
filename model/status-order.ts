/**
 * The order of a host's BareMetalHost status writes. The host workflow's writes go out through the
 * status writer of whichever worker ran the workflow task (activities/kubernetes/status-writer.ts),
 * each retried while its process lives: once the workflow has moved to another worker, the first
 * one may still be retrying an older status after the new one wrote a newer one. Each write
 * therefore carries its place in the host's order, and a write older than the one the object holds
 * is not made.
 *
 * The place is kept in the object's `status.lastUpdated`, which Metal3 defines as when the status
 * was last written (BMO sets it on every status save): the workflow time of the task that made the
 * write (deterministic, later for every later task, across runs and workers alike), to the
 * millisecond, and then the write's number within its run in the nanosecond digits, e.g.
 * `2026-12-04T03:54:35.123000042Z`. Still an RFC 3339 time that Go's metav1.Time reads (to the
 * second when it writes it back), and no field outside Metal3's status schema: a CRD that prunes
 * unknown fields (Metal3's own, in a takeover) keeps it. A `lastUpdated` in any other form (BMO's,
 * a restored status's) orders nothing: the write is made.
 */

const ORDER = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.(\d{3})(\d{6})Z$/;

/** Writes numbered within one run beyond this share the last number (a run's history ends long before). */
const MAX_WRITE = 999_999;

/** The order of the `write`-th write of a run, made by a workflow task at `ms` (workflow time). */
export function statusWriteOrder(ms: number, write: number): string {
  const iso = new Date(ms).toISOString(); // 2026-12-04T03:54:35.123Z
  return `${iso.slice(0, -1)}${String(Math.min(Math.max(0, Math.trunc(write)), MAX_WRITE)).padStart(6, '0')}Z`;
}

/** The place a `lastUpdated` says, when it is in the order's form. */
export function parseStatusWriteOrder(value: unknown): { ms: number; write: number } | undefined {
  if (typeof value !== 'string') return undefined;
  const m = ORDER.exec(value);
  if (!m) return undefined;
  const ms = Date.parse(`${m[1]}.${m[2]}Z`);
  return Number.isNaN(ms) ? undefined : { ms, write: Number(m[3]) };
}

/** Whether the object's `lastUpdated` places a later write than `order` (both in the order's form). */
export function laterWriteHeld(held: unknown, order: string): boolean {
  const a = parseStatusWriteOrder(held);
  const b = parseStatusWriteOrder(order);
  if (!a || !b) return false;
  return a.ms > b.ms || (a.ms === b.ms && a.write > b.write);
}
