/**
 * Every activity's error goes through the one conversion (activities/common/failures.ts)
 * on its way to Temporal, so an activity without a peer mapping of its own
 * still reports a bug as a final InternalError instead of having it retried as
 * if a peer were busy. Activities that map their peer's errors themselves
 * throw failures already, which pass through unchanged.
 */
import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, ActivityInterceptorsFactory, Next } from '@temporalio/worker';
import { toFailure } from '../activities/common/failures';

class FailureMapping implements ActivityInboundCallsInterceptor {
  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    try {
      return await next(input);
    } catch (err) {
      throw toFailure(err);
    }
  }
}

export const activityFailureMapping: ActivityInterceptorsFactory = () => ({ inbound: new FailureMapping() });
