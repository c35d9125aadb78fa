import { expect } from 'vitest';
import { ApplicationFailure } from '@temporalio/common';
import { RedfishError, type BmcError } from '../../../clients/bmc/errors';

/** The RedfishError `p` rejects with (the test fails when it resolves or throws anything else). */
export async function redfishFailure(p: Promise<unknown>): Promise<BmcError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(RedfishError);
    return err as BmcError;
  }
  throw new Error('expected the call to fail');
}

/** The Temporal ApplicationFailure `p` (an activity) rejects with: what the workflow sees. */
export async function applicationFailure(p: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApplicationFailure);
  return err as ApplicationFailure;
}
