/** Input checks shared by the host's operations (provisioners/). */

/** An operation's input lacks what its kind needs: a bug in the caller, not bad user input. */
export function required<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`operation started without ${what}`);
  return value;
}
