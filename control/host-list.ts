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

/** Host workflows that run now, with their search attributes. */
export async function* runningHosts(client: Client, filter: HostListFilter): AsyncGenerator<{ workflowId: string; item: HostListItem; info: WorkflowExecutionInfo }> {
  const query = [...hostListClauses(filter), `ExecutionStatus = 'Running'`].join(' AND ');
  for await (const info of client.workflow.list({ query })) yield { workflowId: info.workflowId, item: hostListItem(info.searchAttributes), info };
}
