/**
 * The message an operator should read for a failed child: the innermost cause
 * (Ironic's own words), not Temporal's wrappers around it.
 */
export function failureMessage(err: unknown): string {
  let current: unknown = err;
  while (current instanceof Error && current.cause instanceof Error) current = current.cause;
  return current instanceof Error ? current.message : String(current);
}
