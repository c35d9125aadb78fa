/** Which Temporal failures the API answers with a 503 the caller retries (api/temporal-errors.ts). */
import { describe, expect, it } from 'vitest';
import { ServiceError } from '@temporalio/client';
import { temporalBusy } from '../../api/temporal-errors';

/** A ServiceError as the client throws it: the gRPC status in `cause`. */
const grpc = (code: number, details: string): ServiceError => new ServiceError('Workflow Update failed', { cause: Object.assign(new Error(`${code} ${details}`), { code, details }) });

describe('temporalBusy', () => {
  it('an update aborted because its workflow task failed: nothing applied, retry', () => {
    const busy = temporalBusy(grpc(9, 'Unable to perform workflow execution update due to unexpected workflow task failure.'));
    expect(busy).toMatchObject({ nothingApplied: true, retryAfterSeconds: 2 });
    expect(busy?.message).toMatch(/workflow task failed.*nothing was changed/);
  });
  it('an update refused while the workflow task is retried after failures: nothing applied, retry', () => {
    const busy = temporalBusy(grpc(9, 'Unable to perform workflow execution update due to Workflow Task in failed state.'));
    expect(busy).toMatchObject({ nothingApplied: true, retryAfterSeconds: 2 });
    expect(busy?.message).toMatch(/Workflow Task in failed state.*nothing was changed/);
  });
  it('a create (update-with-start) refused while the workflow task is retried: the SDK rethrows the gRPC error itself', () => {
    // As rethrowKnownErrorTypes leaves it for a MultiOperationExecutionFailure: the operation's code and message, its encoded detail.
    const raw = Object.assign(new Error('9 FAILED_PRECONDITION: Unable to perform workflow execution update due to Workflow Task in failed state.'), {
      code: 9,
      details: '\n\u0005\u0012\u0003',
      metadata: {},
    });
    const busy = temporalBusy(raw);
    expect(busy).toMatchObject({ nothingApplied: true, retryAfterSeconds: 2 });
    expect(busy?.message).toMatch(/Workflow Task in failed state.*nothing was changed/);
  });
  it('another FAILED_PRECONDITION stays an error (not retried blindly)', () => {
    expect(temporalBusy(grpc(9, 'The limit on the total number of distinct updates in this workflow has been reached (2000).'))).toBeUndefined();
  });
  it('UNAVAILABLE: nothing applied; DEADLINE_EXCEEDED: outcome unknown', () => {
    expect(temporalBusy(grpc(14, 'workflow update was aborted'))).toMatchObject({ nothingApplied: true });
    expect(temporalBusy(grpc(4, 'context deadline exceeded'))).toMatchObject({ nothingApplied: false });
  });
  it('anything but a Temporal service error is not classified', () => {
    expect(temporalBusy(Object.assign(new Error('x'), { code: 14 }))).toBeUndefined();
  });
});
