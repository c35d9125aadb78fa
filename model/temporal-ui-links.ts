/**
 * Links into the Temporal Web UI: the host list filtered by a state (its
 * visibility query on metalflow's search attributes) and one host's run.
 * Pure strings, shared by the demo, the fleet page and the docs.
 */
import { SEARCH_ATTRIBUTES } from './search-attributes';
import { hostWorkflowId } from './host-ref';
import type { HostRef } from './host';

export interface UiLink {
  label: string;
  /** The visibility query, as typed into the UI's search box or `temporal workflow list --query`. */
  query: string;
  url: string;
}

const HOSTS = `WorkflowType = "hostWorkflow" AND ExecutionStatus = "Running"`;

const base = (uiUrl: string): string => uiUrl.replace(/\/+$/, '');

/** The UI's workflow list for `query` in Temporal namespace `namespace`. */
export function workflowListUrl(uiUrl: string, namespace: string, query: string): string {
  return `${base(uiUrl)}/namespaces/${encodeURIComponent(namespace)}/workflows?query=${encodeURIComponent(query)}`;
}

/** One host's workflow in the UI: its latest run. */
export function hostRunUrl(uiUrl: string, namespace: string, ref: HostRef): string {
  return `${base(uiUrl)}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(hostWorkflowId(ref))}`;
}

/** The host query behind each link: hosts in `state`, or in one namespace of hosts when given. */
export function hostStateQuery(filter: { state?: string; hostNamespace?: string; extra?: string }): string {
  const clauses = [HOSTS];
  if (filter.hostNamespace) clauses.push(`${SEARCH_ATTRIBUTES.hostNamespace.name} = "${filter.hostNamespace}"`);
  if (filter.state) clauses.push(`${SEARCH_ATTRIBUTES.provisioningState.name} = "${filter.state}"`);
  if (filter.extra) clauses.push(filter.extra);
  return clauses.join(' AND ');
}

/** The states an operator looks for first, then the cross-cutting views: with an error, powered off, busy. */
export const LINKED_STATES = ['registering', 'inspecting', 'available', 'provisioning', 'provisioned', 'deprovisioning', 'deleting'] as const;

export function hostStateLinks(uiUrl: string, namespace: string, hostNamespace?: string): UiLink[] {
  const views: { label: string; query: string }[] = [
    { label: 'all hosts', query: hostStateQuery({ hostNamespace }) },
    ...LINKED_STATES.map((state) => ({ label: state, query: hostStateQuery({ state, hostNamespace }) })),
    { label: 'with an error', query: hostStateQuery({ hostNamespace, extra: `${SEARCH_ATTRIBUTES.errorType.name} IS NOT NULL` }) },
    { label: 'powered off', query: hostStateQuery({ hostNamespace, extra: `${SEARCH_ATTRIBUTES.poweredOn.name} = false` }) },
    { label: 'running an operation', query: hostStateQuery({ hostNamespace, extra: `${SEARCH_ATTRIBUTES.operation.name} IS NOT NULL` }) },
  ];
  return views.map((v) => ({ ...v, url: workflowListUrl(uiUrl, namespace, v.query) }));
}
