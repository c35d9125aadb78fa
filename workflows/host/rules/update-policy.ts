/**
 * The host's `setUpdatePolicy` update: Metal3's
 * HostUpdatePolicy of the host's name, from the CRD shim or `PUT/DELETE
 * …/update-policy`. Stored as given (the validator checked it); with it a
 * provisioned host may be serviced (servicing-rules.ts).
 */
import { ApplicationFailure, setHandler } from '@temporalio/workflow';
import { formatFieldErrors } from '../../../model/field-error';
import { normalUpdatePolicy, updatePolicyErrors } from '../../../model/host-update-policy';
import { setUpdatePolicyUpdate } from '../../../contracts/host';
import type { HostContext } from '../context';

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

export function setUpdatePolicyHandler(ctx: HostContext): void {
  const { s } = ctx;
  setHandler(
    setUpdatePolicyUpdate,
    (policy) => {
      const next = policy === null ? undefined : normalUpdatePolicy(policy);
      if (same(next, s.updatePolicy)) return { changed: false, ...(s.updatePolicy ? { policy: s.updatePolicy } : {}) };
      if (next === undefined) delete s.updatePolicy;
      else s.updatePolicy = next;
      const message = next ? `HostUpdatePolicy set: firmwareSettings ${next.firmwareSettings ?? 'not set'}, firmwareUpdates ${next.firmwareUpdates ?? 'not set'}` : 'HostUpdatePolicy removed: a provisioned host is not serviced';
      ctx.nudge([{ type: 'Normal', reason: 'UpdatePolicyChanged', message }]);
      return { changed: true, ...(next ? { policy: next } : {}) };
    },
    {
      validator: (policy) => {
        if (policy === null) return;
        const errors = updatePolicyErrors(policy);
        if (errors.length > 0) throw ApplicationFailure.create({ type: 'InvalidRequest', message: formatFieldErrors(errors), details: [errors] });
      },
    },
  );
}
