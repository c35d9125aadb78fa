/**
 * One IPPool's allocation table as a workflow. Allocations and releases are
 * Updates: the workflow applies them one at a time (handlers are synchronous,
 * so two can never interleave), each is in the history before its caller is
 * answered, and the table survives any crash as the history does. Idempotent
 * by claim: the same claim asked twice gets the same address, so a caller
 * retries whatever it did not see answered. No activities, no I/O.
 * Continues as new carrying the table; a cancel ends it without a failure.
 */
import { allHandlersFinished, ApplicationFailure, condition, continueAsNew, isCancellation, setHandler, workflowInfo } from '@temporalio/workflow';
import { allocateAddress } from '../../model/ipam-allocate';
import { ipAddressName, type Allocation } from '../../model/ipam';
import { compileRanges, poolSize } from '../../model/ipam-ranges';
import { poolChangeErrors, validatePoolSpec } from '../../model/ipam-validate';
import type { FieldError } from '../../model/field-error';
import {
  allocateUpdate,
  applyPoolUpdate,
  claimQuery,
  deletePoolUpdate,
  poolViewQuery,
  releaseUpdate,
  type AllocateOutcome,
  type AllocateRequest,
  type PoolInput,
  type PoolState,
  type PoolView,
} from '../../contracts/ippool';

const MAX_HISTORY_EVENTS = 2000;

function invalid(errors: FieldError[]): never {
  throw ApplicationFailure.create({ type: 'InvalidRequest', message: errors.map((e) => `${e.field}: ${e.reason}`).join('; '), details: [errors], nonRetryable: true });
}

export function poolView(st: PoolState): PoolView {
  return {
    ref: st.ref,
    ...(st.spec ? { spec: st.spec } : {}),
    status: { indexes: Object.fromEntries(Object.entries(st.allocations).map(([c, a]) => [c, a.address])), ...(st.lastUpdated ? { lastUpdated: st.lastUpdated } : {}) },
    size: st.spec ? String(poolSize(compileRanges(st.spec))) : '0',
    allocated: Object.keys(st.allocations).length,
  };
}

export async function ipPoolWorkflow(input: PoolInput): Promise<PoolView> {
  const st: PoolState = input.state ?? { ref: input.ref, allocations: {} };
  const maxEvents = input.maxHistoryEvents ?? MAX_HISTORY_EVENTS;
  const now = (): string => new Date().toISOString();
  const pool = `${st.ref.namespace}/${st.ref.name}`;

  setHandler(poolViewQuery, () => poolView(st));
  setHandler(claimQuery, (claim) => {
    const held = st.allocations[claim];
    return held ? { ...held, claim, name: ipAddressName(st.spec?.namePrefix ?? st.ref.name, held.address) } : null;
  });

  setHandler(
    applyPoolUpdate,
    (spec) => {
      st.spec = spec;
      return poolView(st);
    },
    {
      validator: (spec) => {
        if (st.deleted) throw ApplicationFailure.create({ type: 'Conflict', message: `IP pool ${pool} is being deleted` });
        const valid = validatePoolSpec(spec);
        if (!valid.ok) invalid(valid.errors);
        const changed = st.spec ? poolChangeErrors(st.spec, spec, st.allocations) : [];
        if (changed.length > 0) invalid(changed);
      },
    },
  );

  const allocateOne = ({ claim, requestedAddress }: AllocateRequest): AllocateOutcome => {
    const named = (a: Allocation): AllocateOutcome => ({ ok: true, allocation: { ...a, claim, name: ipAddressName(st.spec?.namePrefix ?? st.ref.name, a.address) } });
    const held = st.allocations[claim];
    if (held) return named(held);
    if (st.deleted) return { ok: false, claim, type: 'Conflict', message: `IP pool ${pool} is being deleted` };
    if (!st.spec) return { ok: false, claim, type: 'NotFound', message: `IP pool ${pool} has no spec yet` };
    const result = allocateAddress(st.ref, st.spec, st.allocations, {
      claim,
      ...(requestedAddress !== undefined ? { requested: requestedAddress } : {}),
      at: now(),
      random: Math.random,
    });
    if (!result.ok) return { ok: false, claim, type: result.type, message: result.message };
    st.allocations[claim] = result.allocation;
    st.lastUpdated = result.allocation.at;
    return named(result.allocation);
  };

  // Claim names are checked by the caller (control/ip-pools.ts): one bad name must not refuse a whole batch.
  setHandler(allocateUpdate, (requests) => requests.map(allocateOne));

  setHandler(releaseUpdate, ({ claims }) =>
    claims.map((claim) => {
      const held = st.allocations[claim];
      if (!held) return null;
      delete st.allocations[claim];
      st.lastUpdated = now();
      return held;
    }),
  );

  setHandler(
    deletePoolUpdate,
    () => {
      st.deleted = true;
      return poolView(st);
    },
    {
      validator: () => {
        const claims = Object.keys(st.allocations);
        if (claims.length > 0) {
          throw ApplicationFailure.create({
            type: 'Conflict',
            message: `IP pool ${pool} still has ${claims.length} allocation(s) (${claims.slice(0, 5).join(', ')}${claims.length > 5 ? ', …' : ''}): release their claims first`,
          });
        }
      },
    },
  );

  const tooLong = (): boolean => workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > maxEvents;
  try {
    await condition(() => st.deleted === true || tooLong());
  } catch (err) {
    // Cancelled from the UI or CLI: the pool ends, not as a failure.
    if (isCancellation(err)) return poolView(st);
    throw err;
  }
  await condition(allHandlersFinished);
  if (st.deleted) return poolView(st);
  return continueAsNew<typeof ipPoolWorkflow>({ ...input, state: st });
}
