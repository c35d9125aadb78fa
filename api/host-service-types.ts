/** The HTTP API's host service: what it takes (a host's input, its dependencies) and what a read of an ended host shows. */
import type { Client } from '@temporalio/client';
import type { HostSpec, HostStatus } from '../model/host';
import type { SecretStore } from '../clients/secrets/secret-store';
import type { HostMetadata, HostView, HostWorkflowOptions } from '../contracts/host';

export interface HostInput {
  metadata?: HostMetadata;
  spec: HostSpec;
  credentials?: { username: string; password: string };
  userData?: string;
  networkData?: string;
  metaData?: string;
  /** Only at create: the host starts from this status (registers, adopts), as from Metal3's status annotation. */
  status?: HostStatus;
}

export interface HostServiceDeps {
  client: Client;
  secrets: SecretStore;
  taskQueue: string;
  /** Host workflow tuning, e.g. shorter error backoff in tests. */
  hostOptions?: Partial<HostWorkflowOptions>;
  /**
   * How long a change may wait for Temporal. Without a bound an update to a
   * host no worker serves is re-sent forever and the HTTP call never ends.
   */
  updateTimeoutMs?: number;
  /** Names of the configured sites (METALFLOW_SITES_FILE) besides the default one: `spec.site` must be one of them. */
  sites?: readonly string[];
  /** The sites among them that hold their hosts' BMC credentials themselves (`"secrets": "site"`): never written or read here. */
  credentialSites?: readonly string[];
  /** Where re-adoptions are reported (default: stderr). */
  log?: (message: string) => void;
}

/** A host whose workflow ended abnormally, as a read shows it: its last known state and how the run ended. */
export interface EndedHostView extends HostView {
  workflowEnded: { status: string; closedAt?: string; message: string };
}
