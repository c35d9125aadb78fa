import { expect } from 'vitest';
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
