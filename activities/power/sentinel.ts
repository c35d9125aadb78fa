/**
 * The power sentinel's I/O (workflows/power/power-sentinel.ts): one fields-limited
 * list of Ironic's nodes per interval, whatever the fleet's size, and a
 * `powerChanged` signal to each host whose node changed power or vanished
 * while at rest (power-sentinel-changes.ts). It replaces, for hosts on an
 * Ironic node, most of their own periodic checks (a workflow task and an
 * Ironic read per host every powerCheckSeconds).
 *
 * Safe to retry: a signal only asks the host to read its power itself, so one
 * sent twice costs a read and changes nothing. A new attempt has no previous
 * list and signals nothing for its first interval; a change made while no
 * sentinel ran is found by the host's own (slower) check.
 */
import { Context, log } from '@temporalio/activity';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { IronicClient } from '../../clients/ironic/client';
import { hostWorkflowId } from '../../model/host-ref';
import { powerChangedSignal } from '../../contracts/host';
import { heartbeat, pause } from '../common/activity-context';
import { NOTHING_SEEN, powerChanges, SENTINEL_FIELDS, type SentinelNode } from './sentinel-changes';

export interface WatchPowerInput {
  intervalSeconds: number;
  /** How long this attempt watches before it returns (the workflow starts the next). */
  watchSeconds: number;
  /** Only hosts in this namespace (the host's, not Temporal's); unset: every host with a node. */
  namespace?: string;
}

export interface WatchPowerResult {
  lists: number;
  failedLists: number;
  signalled: number;
}

export function createPowerSentinelActivities(deps: { ironic: IronicClient; client?: Client }) {
  return {
    async watchPowerStates(input: WatchPowerInput): Promise<WatchPowerResult> {
      const client = deps.client ?? Context.current().client;
      const until = Date.now() + input.watchSeconds * 1000;
      const result: WatchPowerResult = { lists: 0, failedLists: 0, signalled: 0 };
      let seen = NOTHING_SEEN;
      let failedInARow = 0;
      for (;;) {
        let now: Map<string, SentinelNode> | undefined;
        try {
          now = new Map((await deps.ironic.listNodeStates([...SENTINEL_FIELDS])).map((n) => [n.uuid, n]));
          result.lists += 1;
          if (failedInARow > 0) log.info('power sentinel: Ironic answers again', { failedInARow });
          failedInARow = 0;
        } catch (err) {
          // Ironic unreachable: this round is skipped and the last list stays the baseline. The sentinel is on by
          // default, also beside a worker whose hosts never use Ironic: said at the first failure and every 20th.
          result.failedLists += 1;
          failedInARow += 1;
          if (failedInARow % 20 === 1) log.warn('power sentinel: Ironic list failed', { error: err instanceof Error ? err.message : String(err), failedInARow });
        }
        if (now) {
          const decided = powerChanges(seen, now);
          seen = decided.seen;
          for (const change of decided.changes) {
            if (input.namespace !== undefined && change.ref.namespace !== input.namespace) continue;
            try {
              await client.workflow.getHandle(hostWorkflowId(change.ref)).signal(powerChangedSignal, { at: new Date().toISOString(), from: change.from, ...(change.to !== undefined ? { to: change.to } : {}) });
              result.signalled += 1;
            } catch (err) {
              // The host is gone (deleted after its node): nothing to tell.
              if (!(err instanceof WorkflowNotFoundError)) throw err;
            }
          }
        }
        heartbeat(result);
        if (Date.now() + input.intervalSeconds * 1000 > until) return result;
        await pause(input.intervalSeconds * 1000);
      }
    },
  };
}

export type PowerSentinelActivities = ReturnType<typeof createPowerSentinelActivities>;
