/**
 * A host's status reaches its BareMetalHost through its worker's status writer, which holds
 * the write in memory (activities/kubernetes/status-writer.ts): a worker killed with a write
 * queued loses it, and a host at rest runs no workflow task that would write it again. Its
 * search attributes are in history, so visibility knows what the object should say. Every
 * period this lists the running host workflows once and compares their provisioning state,
 * operational status and power with the objects the informer holds; a host that differs in
 * two scans in a row (not a write still on its way) is asked to write its status again, once
 * per difference, so a host whose object never catches up costs one signal, not one per scan.
 */
import type { Client } from '@temporalio/client';
import { parseHostWorkflowId } from '../../model/host-ref';
import { SEARCH_ATTRIBUTES } from '../../model/search-attributes';
import { everyPeriod } from './periodic';
import { publishStatusSignal } from '../../contracts/host';

/** What the scan compares: the same three values on both sides. */
export interface StatusFacts {
  provisioningState: string;
  operationalStatus: string;
  poweredOn: boolean;
}

/** The facts of a BareMetalHost's status as the workflow indexes them (an empty state is `unmanaged`). */
export function objectFacts(status: { provisioning?: { state?: string }; operationalStatus?: string; poweredOn?: boolean } | undefined): StatusFacts | undefined {
  if (!status?.provisioning) return undefined;
  return { provisioningState: status.provisioning.state || 'unmanaged', operationalStatus: status.operationalStatus ?? '', poweredOn: status.poweredOn ?? false };
}

/** The facts a host workflow's search attributes hold; undefined when it has not indexed them yet. */
export function indexedFacts(attrs: Record<string, readonly unknown[] | undefined>): StatusFacts | undefined {
  const state = attrs[SEARCH_ATTRIBUTES.provisioningState.name]?.[0];
  const operational = attrs[SEARCH_ATTRIBUTES.operationalStatus.name]?.[0];
  const powered = attrs[SEARCH_ATTRIBUTES.poweredOn.name]?.[0];
  if (typeof state !== 'string' || typeof operational !== 'string') return undefined;
  return { provisioningState: state, operationalStatus: operational, poweredOn: powered === true };
}

const key = (f: StatusFacts): string => `${f.provisioningState}/${f.operationalStatus}/${f.poweredOn}`;

/**
 * The decision, apart from its I/O: `observe` is given each host's two sides once per scan and
 * says whether to signal it. A difference must be seen in two scans in a row, and is signalled once.
 */
export class StaleStatusTracker {
  /** Per host: the difference seen at the last scan, and whether it was signalled. */
  private seen = new Map<string, { difference: string; signalled: boolean }>();
  private scanned = new Set<string>();

  observe(host: string, indexed: StatusFacts | undefined, object: StatusFacts | undefined): boolean {
    this.scanned.add(host);
    if (!indexed || !object || key(indexed) === key(object)) {
      this.seen.delete(host);
      return false;
    }
    const difference = `${key(indexed)} != ${key(object)}`;
    const last = this.seen.get(host);
    if (!last || last.difference !== difference) {
      this.seen.set(host, { difference, signalled: false });
      return false;
    }
    if (last.signalled) return false;
    last.signalled = true;
    return true;
  }

  /** Ends a scan: hosts not listed in it are forgotten. */
  endScan(): void {
    for (const host of this.seen.keys()) if (!this.scanned.has(host)) this.seen.delete(host);
    this.scanned.clear();
  }
}

export interface StatusScanOptions {
  client: Client;
  periodMs: number;
  /** The watched namespaces; every namespace when unset. */
  watchNamespaces?: readonly string[];
  /** The BareMetalHost's status by informer key (`namespace/name`); undefined when the informer has no such object. */
  objectStatus: (key: string) => StatusFacts | undefined;
  log?: (message: string) => void;
}

/** Starts scanning; returns a stop function. */
export function scanStaleStatus(opts: StatusScanOptions): () => void {
  const tracker = new StaleStatusTracker();
  const scan = async (): Promise<void> => {
    const clauses = [`WorkflowType = 'hostWorkflow'`, `ExecutionStatus = 'Running'`];
    if (opts.watchNamespaces) clauses.push(`${SEARCH_ATTRIBUTES.hostNamespace.name} IN (${opts.watchNamespaces.map((ns) => `'${ns}'`).join(', ')})`);
    try {
      for await (const wf of opts.client.workflow.list({ query: clauses.join(' AND ') })) {
        const ref = parseHostWorkflowId(wf.workflowId);
        if (!ref) continue;
        const host = `${ref.namespace}/${ref.name}`;
        const indexed = indexedFacts(wf.searchAttributes as Record<string, readonly unknown[] | undefined>);
        const object = opts.objectStatus(host);
        if (!tracker.observe(host, indexed, object)) continue;
        opts.log?.(`BareMetalHost ${host}: status ${object ? key(object) : '?'} behind its workflow's ${indexed ? key(indexed) : '?'} for two scans; asking the host to write it again`);
        await opts.client.workflow.getHandle(wf.workflowId).signal(publishStatusSignal).catch((err: unknown) => {
          opts.log?.(`BareMetalHost ${host}: could not ask for its status (${err instanceof Error ? err.message : String(err)})`);
        });
      }
      tracker.endScan();
    } catch (err) {
      opts.log?.(`could not list running host workflows to compare their status (retrying next period): ${err instanceof Error ? err.message : String(err)}`);
    }
  };
  return everyPeriod(scan, opts.periodMs);
}
