/**
 * The power sentinel's I/O (workflows/power/power-sentinel.ts): one fields-limited
 * list of Ironic's nodes per interval, whatever the fleet's size (a few seconds
 * after a list that failed, up to the interval), one visibility count of the
 * resting hosts, and a `powerChanged` signal to each host whose node changed
 * power or vanished while at rest (sentinel-changes.ts). It replaces, for hosts
 * on an Ironic node, most of their own periodic checks (a workflow task and an
 * Ironic read per host every powerCheckSeconds).
 *
 * Safe to retry: a signal only asks the host to read its power itself, so one
 * sent twice costs a read and changes nothing. The memory the lists are
 * compared with travels in the heartbeat details, so a retried attempt (a
 * worker restarted or killed, a heartbeat missed) compares its first list with
 * the last list before it: a node lost while no sentinel ran is still told.
 * Only the hourly hand-over to the next activity starts afresh, right after a
 * list that succeeded, and the next one lists at once.
 *
 * One sentinel per site (docs/sites.md): it lists its site's Ironic (this
 * activity runs where that Ironic is reached: the central worker for the
 * default site, the site worker for a configured one) and tells only its
 * site's hosts. A sweep lists the site's resting hosts alone, and a change
 * seen in the list is not told to a host that visibility shows at another
 * site (two sites may share one Ironic).
 */
import { Context, log } from '@temporalio/activity';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { IronicClient } from '../../clients/ironic/client';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery, powerChangedSignal } from '../../contracts/host';
import { DEFAULT_SITE } from '../../model/site';
import { activityContext, heartbeat, keepAlive, pause } from '../common/activity-context';
import { hostListClauses, hostSiteAttribute, runningHosts, type HostListFilter } from '../../control/host-list';
import { SEARCH_ATTRIBUTES } from '../../model/search-attributes';
import type { ProvisioningState } from '../../model/host';
import { alreadyKnown, powerChanges, recordOf, relistSeconds, seenFrom, SENTINEL_FIELDS, sightsOf, sweepCalledFor, sweepTells, type HostRecord, type ListedHost, type PowerChange, type Seen, type Sight } from './sentinel-changes';

/** Workflow ids per visibility list when the sentinel looks up the hosts it is about to tell. */
const RECORDS_PER_LIST = 100;

/** Where a host rests on its node: the states a sweep looks at (a host in an operation finds a lost node itself). */
const RESTING: ProvisioningState[] = ['available', 'provisioned', 'externally provisioned'];

/**
 * Above this the memory is not heartbeated (a retry then starts afresh, as before): Temporal refuses
 * payloads over 2 MiB. About 90 bytes a node: some 20,000 nodes.
 */
const MAX_RECORD_BYTES = 1_800_000;

export interface WatchPowerInput {
  intervalSeconds: number;
  /** How long this attempt watches before it returns (the workflow starts the next). */
  watchSeconds: number;
  /** Only hosts in this namespace (the host's, not Temporal's); unset: every host with a node. */
  namespace?: string;
  /** The site whose Ironic this is and whose hosts are told; unset: the default site. */
  site?: string;
}

export interface WatchPowerResult {
  lists: number;
  failedLists: number;
  signalled: number;
  /** Changes not told: the host's own record already showed them (alreadyKnown). */
  known?: number;
  /** Whether this attempt started from the memory of an earlier one. */
  resumed?: boolean;
  /** Visibility lists of resting hosts (after Ironic did not answer, lost most nodes at once, or visibility counted more resting hosts than it knew). */
  sweeps?: number;
}

export function createPowerSentinelActivities(deps: SentinelDeps) {
  return {
    async watchPowerStates(input: WatchPowerInput): Promise<WatchPowerResult> {
      // Between lists too: the heartbeat timeout (30 s) is how soon a dead worker's watch is retried elsewhere.
      const stopBeats = keepAlive(10_000);
      try {
        return await watch(deps, input);
      } finally {
        stopBeats();
      }
    },
  };
}

interface SentinelDeps {
  ironic: IronicClient;
  client?: Client;
  /** The wait between lists (activity-context's cancellable pause); a test records it instead. */
  pause?: (ms: number) => Promise<void>;
}

async function watch(deps: SentinelDeps, input: WatchPowerInput): Promise<WatchPowerResult> {
  const client = deps.client ?? Context.current().client;
  const until = Date.now() + input.watchSeconds * 1000;
  let seen: Seen = seenFrom(activityContext()?.info.heartbeatDetails);
  const result: WatchPowerResult = { lists: 0, failedLists: 0, signalled: 0, ...(seen.last.size > 0 || seen.lost.size > 0 ? { resumed: true } : {}) };
  let failedInARow = 0;
  let recordTooLarge = false;
  /** Ironic did not answer a list: it may have restarted on an empty database meanwhile. */
  let sweepDue = false;
  let countFailed = false;
  const tell = async (changes: (PowerChange & { workflowId?: string })[]): Promise<void> => {
    for (const change of changes) {
      const owner = `${change.ref.namespace}/${change.ref.name}`;
      try {
        await client.workflow.getHandle(change.workflowId ?? hostWorkflowId(change.ref)).signal(powerChangedSignal, {
          at: new Date().toISOString(),
          from: change.from,
          ...(change.to !== undefined ? { to: change.to } : {}),
          ...(change.provision ? { provision: change.provision } : {}),
        });
        result.signalled += 1;
      } catch (err) {
        // The host is gone (deleted after its node): nothing to tell, now or later.
        if (!(err instanceof WorkflowNotFoundError)) throw err;
        if (seen.lost.has(owner)) seen = forgetLost(seen, owner);
      }
    }
  };
  for (;;) {
    let now: Map<string, Sight> | undefined;
    try {
      now = sightsOf(await deps.ironic.listNodeStates([...SENTINEL_FIELDS]), input.namespace);
      result.lists += 1;
      if (failedInARow > 0) log.info('power sentinel: Ironic answers again', { failedInARow });
      failedInARow = 0;
    } catch (err) {
      // Ironic unreachable: this round is skipped and the last list stays the baseline. The sentinel is on by
      // default, also beside a worker whose hosts never use Ironic: said at the first failure and every 20th.
      result.failedLists += 1;
      failedInARow += 1;
      sweepDue = true;
      if (failedInARow % 20 === 1) log.warn('power sentinel: Ironic list failed', { error: err instanceof Error ? err.message : String(err), failedInARow });
    }
    if (now) {
      const decided = powerChanges(seen, now);
      seen = decided.seen;
      const unknown = await unknownTo(client, decided.changes, input.site ?? DEFAULT_SITE);
      if (unknown.length < decided.changes.length) result.known = (result.known ?? 0) + decided.changes.length - unknown.length;
      await tell(unknown);
      if (decided.massVanish) sweepDue = true;
      if (!sweepDue) {
        // One count per list: a resting host whose node was never listed (made after the last list, lost
        // before this one) shows only as a host more than the sentinel knows of.
        try {
          if (sweepCalledFor(await countRestingHosts(client, input.namespace, input.site ?? DEFAULT_SITE), seen)) sweepDue = true;
          countFailed = false;
        } catch (err) {
          if (!countFailed) log.warn('power sentinel: counting resting hosts failed', { error: err instanceof Error ? err.message : String(err) });
          countFailed = true;
        }
      }
      if (sweepDue) {
        let hosts: ListedHost[] | undefined;
        try {
          hosts = await restingHosts(client, input.namespace, input.site ?? DEFAULT_SITE);
        } catch (err) {
          // Visibility did not answer: swept at the next list.
          log.warn('power sentinel: listing resting hosts failed', { error: err instanceof Error ? err.message : String(err) });
        }
        if (hosts) {
          const swept = sweepTells(hosts, now, seen);
          seen = swept.seen;
          sweepDue = false;
          result.sweeps = (result.sweeps ?? 0) + 1;
          await tell(swept.changes);
        }
      }
    }
    const record = recordOf(seen);
    const fits = JSON.stringify(record).length <= MAX_RECORD_BYTES;
    if (!fits && !recordTooLarge) log.warn('power sentinel: too many nodes to keep its memory across a restart', { nodes: record.nodes.length });
    recordTooLarge = !fits;
    heartbeat(fits ? { ...result, seen: record } : result);
    // Handed over only right after a list that succeeded: the next attempt's first list is then the next one.
    if (now && Date.now() + input.intervalSeconds * 1000 > until) return result;
    // After a failed list, soon again: a restarted Ironic is listed a few seconds after it answers.
    await (deps.pause ?? pause)(relistSeconds(failedInARow, input.intervalSeconds) * 1000);
  }
}

export type PowerSentinelActivities = ReturnType<typeof createPowerSentinelActivities>;

function forgetLost(seen: Seen, owner: string): Seen {
  const lost = new Map(seen.lost);
  lost.delete(owner);
  return { ...seen, lost };
}

/**
 * The changes their hosts do not know yet (alreadyKnown), by one visibility list per RECORDS_PER_LIST hosts:
 * most of what a list shows is the hosts' own operations, whose end each host has recorded. Visibility not
 * answering tells every host, as before. A host indexed at another site than the sentinel's is not told: its
 * node is in an Ironic that site shares with this one, and its own site's sentinel tells it.
 */
async function unknownTo(client: Client, changes: PowerChange[], site: string): Promise<PowerChange[]> {
  if (changes.length === 0) return changes;
  const records = new Map<string, HostRecord>();
  const elsewhere = new Set<string>();
  const ids = [...new Set(changes.map((c) => hostWorkflowId(c.ref)))];
  try {
    for (let i = 0; i < ids.length; i += RECORDS_PER_LIST) {
      for await (const { workflowId, item, info } of runningHosts(client, { workflowIds: ids.slice(i, i + RECORDS_PER_LIST) })) {
        records.set(workflowId, { provisioningState: item.provisioningState, poweredOn: item.poweredOn });
        const indexed = hostSiteAttribute(info.searchAttributes);
        if (indexed !== undefined && indexed !== site) elsewhere.add(workflowId);
      }
    }
  } catch (err) {
    log.warn('power sentinel: looking up the hosts to tell failed; telling them all', { error: err instanceof Error ? err.message : String(err) });
    return changes;
  }
  return changes.filter((c) => !elsewhere.has(hostWorkflowId(c.ref)) && !alreadyKnown(c, records.get(hostWorkflowId(c.ref))));
}

/** The hosts a sweep looks at: resting, of the sentinel's site (and those not indexed at any yet), of the namespace when one is given. */
function restingFilter(namespace: string | undefined, site: string): HostListFilter {
  return { ...(namespace !== undefined ? { namespace } : {}), states: RESTING, sites: [site] };
}

/** How many running hosts rest (not detached): one visibility count, the sweep's hosts less the detached. */
async function countRestingHosts(client: Client, namespace: string | undefined, site: string): Promise<number> {
  const query = [...hostListClauses(restingFilter(namespace, site)), `ExecutionStatus = 'Running'`, `${SEARCH_ATTRIBUTES.operationalStatus.name} != 'detached'`].join(' AND ');
  return (await client.workflow.count(query)).count;
}

/**
 * The site's resting hosts visibility lists (one paginated list), with their owner marks. A host whose run has not
 * indexed its site (begun before hosts set MetalflowSite) is asked its site from its view; one that does not answer
 * counts as the default site's, whose sentinel swept every host before sites had sentinels of their own.
 */
async function restingHosts(client: Client, namespace: string | undefined, site: string): Promise<ListedHost[]> {
  const out: ListedHost[] = [];
  const unindexed: ListedHost[] = [];
  for await (const { workflowId, item, info } of runningHosts(client, restingFilter(namespace, site))) {
    if (!item.namespace || !item.name) continue;
    const host = { workflowId, owner: `${item.namespace}/${item.name}`, detached: item.operationalStatus === 'detached' };
    (hostSiteAttribute(info.searchAttributes) === undefined ? unindexed : out).push(host);
  }
  for (const host of unindexed) {
    const viewed = await client.workflow
      .getHandle(host.workflowId)
      .query(hostViewQuery)
      .then((v) => v.spec?.site ?? DEFAULT_SITE)
      .catch(() => DEFAULT_SITE);
    if (viewed === site) out.push(host);
  }
  return out;
}
