/** Why a reservation cannot be written or released, as a typed error the activity maps to a Temporal failure. */
export type DhcpErrorType =
  /** The reservation itself is invalid (MAC, address, hostname, tag). */
  | 'invalid'
  /** Another host's reservation already holds this MAC or address. */
  | 'conflict'
  /** A file under metalflow's name that metalflow did not write (no marker line): left alone. */
  | 'not-owned'
  /** The hosts dir or leases file cannot be read or written (missing dir, permissions, disk). */
  | 'io';

export class DhcpError extends Error {
  override readonly name = 'DhcpError';
  constructor(
    readonly type: DhcpErrorType,
    message: string,
  ) {
    super(message);
  }
}
