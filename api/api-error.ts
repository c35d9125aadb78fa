/** The API's typed errors: what the server answers (status, type, fields), and Temporal's busy answers as a 503. */
import type { FieldError } from '../model/field-error';
import { temporalBusy } from './temporal-errors';

export class ApiError extends Error {
  constructor(
    readonly status: 400 | 403 | 404 | 409 | 503,
    readonly type: string,
    message: string,
    readonly fields: FieldError[] = [],
    /** Sent as Retry-After with a 503. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

/** A transient Temporal failure as a 503 the caller retries; undefined for anything else. */
export function busyError(err: unknown): ApiError | undefined {
  const busy = temporalBusy(err);
  return busy && new ApiError(503, 'Unavailable', busy.message, [], busy.retryAfterSeconds);
}
