/**
 * A lowered `status.provisioningFailCount`, as BMO reads it: BMO re-reads its
 * status on every reconcile, so an edit of the count lets a host held at the
 * retry limit (provisioning-retries.ts) provision again. Here the workflow owns
 * the status: the edit arrives as the update `resetProvisioningFailCount`.
 */
import { ApplicationFailure, setHandler } from '@temporalio/workflow';
import { resetProvisioningFailCountUpdate } from '../../../contracts/host';
import type { HostContext } from '../context';

export function setFailCountResetHandler(ctx: HostContext): void {
  const { s } = ctx;
  setHandler(
    resetProvisioningFailCountUpdate,
    ({ provisioningFailCount: asked }) => {
      const current = s.status.provisioningFailCount ?? 0;
      // Only ever lowered: a count raised by hand would stop a host BMO would still try.
      if (asked >= current) return { reset: false, provisioningFailCount: current };
      s.status.provisioningFailCount = asked;
      ctx.nudge([{ type: 'Normal', reason: 'ProvisioningFailCountReset', message: `provisioningFailCount reset from ${current} to ${asked}` }]);
      return { reset: true, provisioningFailCount: asked };
    },
    {
      validator: (req) => {
        const n = req?.provisioningFailCount;
        if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) {
          throw ApplicationFailure.create({ type: 'InvalidRequest', message: `provisioningFailCount: must be a whole number of at least 0, got ${JSON.stringify(n)}` });
        }
      },
    },
  );
}
