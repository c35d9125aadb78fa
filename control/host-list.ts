/**
 * Hosts as Temporal's visibility lists them: the host workflows and their
 * search attributes (namespace, name, provisioning state, BMC type, power,
 * running operation, error type, site), read by
 * the API's host list and by a fleet operation's selection.
 */
import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import type { ProvisioningState } from '../model/host';
import { SEARCH_ATTRIBUTES } from '../model/search-attributes';

export interface HostListItem {
  namespace: string;
  name: string;
  provisioningState: string;
  operationalStatus: string;
  bmcType: string;
  poweredOn: boolean;
  /** The operation running now; '' while none runs. */
  operation: string;
  /** status.errorType; '' without an error. */
  errorType: string;
  /** How the host's workflow ended, when it ended abnormally (see GET's `workflowEnded`). */
  workflowEnded?: string;
}

export function hostListItem(attributes: Record<string, unknown> | undefined): HostListItem {
  const attr = (key: { name: string }): string => {
    const value = attributes?.[key.name];
    return Array.isArray(value) && typeof value[0] === 'string' ? value[0] : '';
  };
  return {
    namespace: attr(SEARCH_ATTRIBUTES.hostNamespace),
    name: attr(SEARCH_ATTRIBUTES.hostName),
    provisioningState: attr(SEARCH_ATTRIBUTES.provisioningState),
    operationalStatus: attr(SEARCH_ATTRIBUTES.operationalStatus),
    bmcType: attr(SEARCH_ATTRIBUTES.bmcType),
    poweredOn: attributes?.[SEARCH_ATTRIBUTES.poweredOn.name]?.toString() === 'true',
    operation: attr(SEARCH_ATTRIBUTES.operation),
    errorType: attr(SEARCH_ATTRIBUTES.errorType),
  };
}

/** The host's site as its workflow indexed it; undefined for a host whose run has not set it (docs/sites.md). */
export function hostSiteAttribute(attributes: Record<string, unknown> | undefined): string | undefined {
  const value = attributes?.[SEARCH_ATTRIBUTES.site.name];
  return Array.isArray(value) && typeof value[0] === 'string' ? value[0] : undefined;
}

export interface HostListFilter {
  namespace?: string;
  /** Any of these provisioning states. */
  states?: readonly ProvisioningState[];
  /**
   * Any of these sites, and every host whose run has not indexed its site yet (its caller reads
   * those hosts' site from their view): a run begun before hosts set the attribute may be of any site.
   */
  sites?: readonly string[];
  /** Only these workflow ids (made of Kubernetes names: no quotes). */
  workflowIds?: readonly string[];
}

/** The visibility query's clauses for host workflows matching the filter (values are validated names, never free text). */
export function hostListClauses(filter: HostListFilter): string[] {
  const clauses = [`WorkflowType = 'hostWorkflow'`];
  if (filter.namespace) clauses.push(`${SEARCH_ATTRIBUTES.hostNamespace.name} = '${filter.namespace}'`);
  if (filter.states && filter.states.length > 0) {
    clauses.push(`(${filter.states.map((s) => `${SEARCH_ATTRIBUTES.provisioningState.name} = '${s}'`).join(' OR ')})`);
  }
  if (filter.sites && filter.sites.length > 0) {
    const site = SEARCH_ATTRIBUTES.site.name;
    clauses.push(`(${[...filter.sites.map((s) => `${site} = '${s}'`), `${site} IS NULL`].join(' OR ')})`);
  }
  if (filter.workflowIds && filter.workflowIds.length > 0) clauses.push(`WorkflowId IN (${filter.workflowIds.map((id) => `'${id}'`).join(', ')})`);
  return clauses;
}

/**
 * How long after a run continued as new its closed record still stands for its host. The next run's record is
 * written by a visibility task of its own, which may land after the close: until then a list of running hosts
 * alone would not name the host at all (a fleet selected under load missed a host that way).
 */
export const HANDOVER_WINDOW_MS = 60_000;
/** Workflow ids per visibility query when looking for the runs that followed a hand-over. */
const IDS_PER_QUERY = 100;

type Listed = { workflowId: string; item: HostListItem; info: WorkflowExecutionInfo };

/**
 * Host workflows that run now, with their search attributes: every running record the filter matches, and the
 * record of a run that continued as new within HANDOVER_WINDOW_MS whose next run visibility does not show yet.
 */
export async function* runningHosts(client: Client, filter: HostListFilter, now = Date.now()): AsyncGenerator<Listed> {
  const since = new Date(now - HANDOVER_WINDOW_MS).toISOString();
  const live = `(ExecutionStatus = 'Running' OR (ExecutionStatus = 'ContinuedAsNew' AND CloseTime > '${since}'))`;
  const running = new Set<string>();
  const handedOver = new Map<string, WorkflowExecutionInfo>();
  for await (const info of client.workflow.list({ query: [...hostListClauses(filter), live].join(' AND ') })) {
    if (info.status.name === 'RUNNING') {
      running.add(info.workflowId);
      yield { workflowId: info.workflowId, item: hostListItem(info.searchAttributes), info };
    } else {
      const known = handedOver.get(info.workflowId);
      if (!known || known.startTime < info.startTime) handedOver.set(info.workflowId, info);
    }
  }
  const pending = [...handedOver.values()].filter((info) => !running.has(info.workflowId));
  for (let i = 0; i < pending.length; i += IDS_PER_QUERY) {
    const chunk = pending.slice(i, i + IDS_PER_QUERY);
    // Unfiltered by state or site: a next run that no longer matches the filter, or one that has ended since, is still newer.
    const query = [`WorkflowType = 'hostWorkflow'`, `WorkflowId IN (${chunk.map((c) => `'${c.workflowId}'`).join(', ')})`, `StartTime >= '${since}'`].join(' AND ');
    const later: WorkflowExecutionInfo[] = [];
    for await (const info of client.workflow.list({ query })) later.push(info);
    for (const info of awaitingSuccessor(chunk, later)) yield { workflowId: info.workflowId, item: hostListItem(info.searchAttributes), info };
  }
}

/** The handed-over records with no later run of their workflow among `later`: their host runs on, not yet indexed. */
export function awaitingSuccessor(handedOver: readonly WorkflowExecutionInfo[], later: readonly WorkflowExecutionInfo[]): WorkflowExecutionInfo[] {
  return handedOver.filter((closed) => !later.some((l) => l.workflowId === closed.workflowId && l.runId !== closed.runId && l.startTime >= closed.startTime));
}
