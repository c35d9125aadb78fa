/**
 * What the HTTP API does for a host, in Temporal terms: update-with-start the
 * host's workflow, query it, list hosts through search attributes. Secret
 * values are written to the secret store here and never passed on.
 */
import {
  WithStartWorkflowOperation,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  type Client,
} from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { FieldError } from '../types/field-error';
import type { HostRef, HostSpec, Image, ProvisioningState } from '../types/host';
import { defaultSecretNames, hostWorkflowId, validateHostRef } from '../types/host-ref';
import { SEARCH_ATTRIBUTES } from '../types/search-attributes';
import { validateHostSpec } from '../types/validate';
import { temporalBusy } from './temporal-errors';
import type { SecretData, SecretStore } from '../clients/secrets/secret-store';
import {
  applySpecUpdate,
  deleteHostUpdate,
  hostViewQuery,
  powerRequestsUpdate,
  setImageUpdate,
  setPausedUpdate,
  type HostView,
  type HostWorkflowOptions,
} from '../workflows/definitions';
import type { hostWorkflow } from '../workflows/host';
import type { PowerRequestChange, RebootMode } from '../workflows/power-requests';

export class ApiError extends Error {
  constructor(
    readonly status: 400 | 404 | 409 | 503,
    readonly type: string,
    message: string,
    readonly fields: FieldError[] = [],
    /** Sent as Retry-After with a 503. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

/** A transient Temporal failure as a 503 the caller retries; undefined for anything else. */
export function busyError(err: unknown): ApiError | undefined {
  const busy = temporalBusy(err);
  return busy && new ApiError(503, 'Unavailable', busy.message, [], busy.retryAfterSeconds);
}

export interface HostInput {
  spec: HostSpec;
  credentials?: { username: string; password: string };
  userData?: string;
  networkData?: string;
  metaData?: string;
}

export interface HostListItem {
  namespace: string;
  name: string;
  provisioningState: string;
  operationalStatus: string;
  bmcType: string;
}

interface SecretWrite {
  name: string;
  data: SecretData;
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
}

const DEFAULT_UPDATE_TIMEOUT_MS = 60_000;

const invalid = (errors: FieldError[]): ApiError =>
  new ApiError(400, 'InvalidSpec', errors.map((e) => `${e.field}: ${e.reason}`).join('; '), errors);

export class HostService {
  constructor(private readonly deps: HostServiceDeps) {}

  get client(): Client {
    return this.deps.client;
  }

  private checkRef(ref: HostRef): void {
    const valid = validateHostRef(ref);
    if (!valid.ok) throw invalid(valid.errors);
  }

  /** Fills secret references the request's inline values will be stored under. */
  private secretWrites(ref: HostRef, input: HostInput): { spec: HostSpec; writes: SecretWrite[] } {
    const names = defaultSecretNames(ref);
    const spec: HostSpec = structuredClone(input.spec);
    const writes: SecretWrite[] = [];
    if (input.credentials) {
      if (!spec.bmc) throw invalid([{ field: 'credentials', reason: 'are only accepted with spec.bmc, which names the Secret to store them in' }]);
      writes.push({ name: spec.bmc.credentialsName, data: { ...input.credentials } });
    }
    const inline = [
      ['userData', input.userData, names.userData],
      ['networkData', input.networkData, names.networkData],
      ['metaData', input.metaData, names.metaData],
    ] as const;
    for (const [key, value, defaultName] of inline) {
      if (value === undefined) continue;
      spec[key] ??= { name: defaultName };
      writes.push({ name: spec[key].name, data: { [key]: value } });
    }
    return { spec, writes };
  }

  /** Every secret the spec references must exist or be written by this request. */
  private async checkSecrets(ref: HostRef, spec: HostSpec, writes: SecretWrite[]): Promise<void> {
    const errors: FieldError[] = [];
    const written = new Set(writes.map((w) => w.name));
    const refs: [string, string | undefined, string][] = [
      ['spec.bmc.credentialsName', spec.bmc?.credentialsName, 'credentials'],
      ['spec.userData.name', spec.userData?.name, 'userData'],
      ['spec.networkData.name', spec.networkData?.name, 'networkData'],
      ['spec.metaData.name', spec.metaData?.name, 'metaData'],
    ];
    for (const [field, name, inlineKey] of refs) {
      if (!name || written.has(name)) continue;
      if (!(await this.deps.secrets.read(ref.namespace, name))) {
        errors.push({
          field,
          reason: `Secret ${ref.namespace}/${name} does not exist; send "${inlineKey}" in the request to create it`,
        });
      }
    }
    const creds = writes.find((w) => w.name === spec.bmc?.credentialsName)?.data;
    if (creds && (!creds.username || !creds.password)) {
      errors.push({ field: 'credentials', reason: 'username and password must both be non-empty' });
    }
    if (errors.length > 0) throw invalid(errors);
  }

  /** Creates the host or replaces its spec. Either everything is applied or nothing is. */
  async put(ref: HostRef, input: HostInput): Promise<{ created: boolean; view: HostView }> {
    this.checkRef(ref);
    const { spec, writes } = this.secretWrites(ref, input);
    const valid = validateHostSpec(ref, spec);
    if (!valid.ok) throw invalid(valid.errors);
    await this.checkSecrets(ref, valid.value.spec, writes);

    const previous = await Promise.all(
      writes.map(async (w) => ({ name: w.name, data: await this.deps.secrets.read(ref.namespace, w.name) })),
    );
    for (const w of writes) await this.deps.secrets.write(ref.namespace, w.name, w.data);
    try {
      const startWorkflowOperation = new WithStartWorkflowOperation<typeof hostWorkflow>('hostWorkflow', {
        workflowId: hostWorkflowId(ref),
        taskQueue: this.deps.taskQueue,
        args: [{ ref, options: this.deps.hostOptions }],
        workflowIdConflictPolicy: 'USE_EXISTING',
      });
      const result = await this.bounded(() =>
        this.deps.client.workflow.executeUpdateWithStart(applySpecUpdate, { args: [valid.value.spec], startWorkflowOperation }),
      );
      // The update's own result: a read after it could fail and wrongly undo the secrets below.
      return { created: result.generation === 1 && result.changed, view: result.view };
    } catch (err) {
      // Put the secrets back as they were, so a rejected change leaves nothing behind.
      // Not after a timeout: the server may still apply the spec, which then needs them.
      if (temporalBusy(err)?.nothingApplied === false) throw this.translate(err);
      for (const p of previous) {
        if (p.data) await this.deps.secrets.write(ref.namespace, p.name, p.data);
        else await this.deps.secrets.remove(ref.namespace, p.name);
      }
      throw this.translate(err);
    }
  }

  async setImage(ref: HostRef, image: Image | null): Promise<HostView> {
    this.checkRef(ref);
    if (image) {
      const current = await this.get(ref);
      if (current.spec) {
        const valid = validateHostSpec(ref, { ...current.spec, image });
        if (!valid.ok) throw invalid(valid.errors);
      }
    }
    await this.running(ref);
    try {
      return (await this.bounded(() => this.handle(ref).executeUpdate(setImageUpdate, { args: [image] }))).view;
    } catch (err) {
      throw this.translate(err);
    }
  }

  /** One-shot reboot (Metal3's reboot.metal3.io): soft first, hard if that fails; or hard. */
  reboot(ref: HostRef, mode: RebootMode = 'soft'): Promise<HostView> {
    return this.changePower(ref, { reboot: { mode } });
  }

  /** Keyed power-off request (reboot.metal3.io/<key>): the host stays off until every key is released. */
  holdPowerOff(ref: HostRef, key: string, mode: RebootMode = 'soft'): Promise<HostView> {
    return this.changePower(ref, { holdOff: { [key]: mode } });
  }

  releasePowerOff(ref: HostRef, key: string): Promise<HostView> {
    return this.changePower(ref, { release: [key] });
  }

  /** Pause (nothing touches the hardware; a running operation is cancelled) or resume the host. */
  async setPaused(ref: HostRef, paused: boolean, reason?: string): Promise<HostView> {
    this.checkRef(ref);
    await this.running(ref);
    try {
      await this.bounded(() => this.handle(ref).executeUpdate(setPausedUpdate, { args: [{ paused, ...(reason ? { reason } : {}) }] }));
    } catch (err) {
      throw this.translate(err);
    }
    return this.handle(ref).query(hostViewQuery);
  }

  private async changePower(ref: HostRef, change: PowerRequestChange): Promise<HostView> {
    this.checkRef(ref);
    await this.running(ref);
    try {
      await this.bounded(() => this.handle(ref).executeUpdate(powerRequestsUpdate, { args: [change] }));
    } catch (err) {
      throw this.translate(err);
    }
    return this.handle(ref).query(hostViewQuery);
  }

  async get(ref: HostRef): Promise<HostView> {
    this.checkRef(ref);
    await this.running(ref);
    return this.handle(ref).query(hostViewQuery);
  }

  async remove(ref: HostRef): Promise<HostView> {
    this.checkRef(ref);
    await this.running(ref);
    try {
      await this.bounded(() => this.handle(ref).executeUpdate(deleteHostUpdate));
    } catch (err) {
      throw this.translate(err);
    }
    return this.handle(ref).query(hostViewQuery);
  }

  async list(filter: { namespace?: string; state?: ProvisioningState }): Promise<HostListItem[]> {
    const clauses = [`WorkflowType = 'hostWorkflow'`, `ExecutionStatus = 'Running'`];
    if (filter.namespace) clauses.push(`${SEARCH_ATTRIBUTES.hostNamespace.name} = '${filter.namespace}'`);
    if (filter.state) clauses.push(`${SEARCH_ATTRIBUTES.provisioningState.name} = '${filter.state}'`);
    const items: HostListItem[] = [];
    for await (const wf of this.deps.client.workflow.list({ query: clauses.join(' AND ') })) {
      const attr = (key: { name: string }): string => {
        const value = wf.searchAttributes?.[key.name];
        return Array.isArray(value) && typeof value[0] === 'string' ? value[0] : '';
      };
      items.push({
        namespace: attr(SEARCH_ATTRIBUTES.hostNamespace),
        name: attr(SEARCH_ATTRIBUTES.hostName),
        provisioningState: attr(SEARCH_ATTRIBUTES.provisioningState),
        operationalStatus: attr(SEARCH_ATTRIBUTES.operationalStatus),
        bmcType: attr(SEARCH_ATTRIBUTES.bmcType),
      });
    }
    return items.sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`));
  }

  private bounded<T>(call: () => Promise<T>): Promise<T> {
    return this.deps.client.withDeadline(Date.now() + (this.deps.updateTimeoutMs ?? DEFAULT_UPDATE_TIMEOUT_MS), call);
  }

  private handle(ref: HostRef) {
    return this.deps.client.workflow.getHandle(hostWorkflowId(ref));
  }

  /** A host exists while its workflow runs; a finished run is a deleted host. */
  private async running(ref: HostRef): Promise<void> {
    try {
      const description = await this.handle(ref).describe();
      if (description.status.name === 'RUNNING') return;
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
    }
    throw new ApiError(404, 'NotFound', `host ${ref.namespace}/${ref.name} does not exist`);
  }

  private translate(err: unknown): unknown {
    if (err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure) {
      const cause = err.cause;
      if (cause.type === 'InvalidSpec') {
        const fields = (cause.details?.[0] as FieldError[] | undefined) ?? [];
        return new ApiError(400, 'InvalidSpec', cause.message, fields);
      }
      if (cause.type === 'InvalidRequest') {
        const fields = (cause.details?.[0] as FieldError[] | undefined) ?? [];
        return new ApiError(400, 'InvalidRequest', cause.message, fields);
      }
      if (cause.type === 'Conflict') return new ApiError(409, 'Conflict', cause.message);
      if (cause.type === 'NotFound') return new ApiError(404, 'NotFound', cause.message);
    }
    return busyError(err) ?? err;
  }
}
