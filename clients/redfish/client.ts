/**
 * A Redfish client over undici, for activities that speak to a BMC directly.
 *
 * - Service root discovery; the system is the BMC address's path
 *   (`/redfish/v1/Systems/<id>`), or the only system when the path is the
 *   service root.
 * - Session auth (POST SessionService/Sessions → X-Auth-Token, deleted on
 *   `close()`, re-created once on a 401) with a fall back to HTTP basic when
 *   the service has no sessions; or basic only, or sessions only.
 * - TLS verification on unless `disableCertificateVerification`; a timeout
 *   on every request.
 * - PATCH with `If-Match` (the ETag read just before), one refresh-and-retry
 *   on 412; 202 Accepted answers followed through their task monitor.
 * - Errors are `RedfishError`s (see ../errors.ts) whose messages say which
 *   BMC, which request and what went wrong, never with the password.
 */
import { Agent, request, type Dispatcher } from 'undici';
import type { BmcAccess } from '../../types/bmc';
import { hostForUrl } from '../../types/bmc';
import type { HardwareDetails } from '../../types/host';
import { abortReason, sleep } from '../bmc/abort';
import { RedfishError, redact } from '../bmc/errors';
import {
  arr,
  header,
  httpError,
  networkError,
  obj,
  odataId,
  parseJson,
  redfishErrorDetail,
  str,
  type Json,
  type RedfishResponse,
} from './http';
import { hardwareFromRedfish } from './inventory';

export type { Json, RedfishResponse } from './http';

export type RedfishAuthMode = 'auto' | 'session' | 'basic';

/** Where the BMC is: a parsed BMC address (`parseBmcAddress`) fits. */
export type RedfishEndpoint = Pick<BmcAccess, 'transport' | 'host' | 'port' | 'path'>;

export interface RedfishClientOptions {
  endpoint: RedfishEndpoint;
  username: string;
  password: string;
  /** `auto` (default): a session when the service offers one, else basic. */
  auth?: RedfishAuthMode;
  /** TLS verification is on unless this is true. */
  disableCertificateVerification?: boolean;
  /** Extra CA certificate(s), PEM, trusted for this BMC. */
  ca?: string | Buffer;
  /** Every HTTP request (connect, headers and body). Default 30 s. */
  timeoutMs?: number;
  /** How long to follow a task monitor. Default 10 min. */
  taskTimeoutMs?: number;
  /** Task monitor poll interval when the BMC gives no Retry-After. Default 1 s. */
  taskPollIntervalMs?: number;
  /** Overrides the client's own undici Agent (then TLS options above are ignored). */
  dispatcher?: Dispatcher;
  /** Cancels every request and wait of this client (a cancelled activity); they throw its reason. */
  signal?: AbortSignal;
}

export type RedfishPowerState = 'On' | 'Off' | 'PoweringOn' | 'PoweringOff' | 'Paused';

export const RESET_TYPES = ['On', 'ForceOff', 'GracefulShutdown', 'ForceRestart', 'GracefulRestart', 'PowerCycle', 'ForceOn', 'Nmi', 'PushPowerButton'] as const;
export type ResetType = (typeof RESET_TYPES)[number];

export type BootTarget = 'Pxe' | 'Cd' | 'Hdd' | 'UefiHttp';
export type BootOverrideEnabled = 'Once' | 'Continuous';
export type BootOverrideMode = 'UEFI' | 'Legacy';

export interface BootOverride {
  target: BootTarget;
  /** Default `Once`. */
  enabled?: BootOverrideEnabled;
  /** Left as the BMC has it when omitted. */
  mode?: BootOverrideMode;
  /** For `UefiHttp`: the URI to boot (Boot.HttpBootUri). */
  httpBootUri?: string;
}

export interface VirtualMediaState {
  /** The slot's resource path. */
  path: string;
  id?: string;
  mediaTypes: string[];
  image?: string;
  inserted: boolean;
  /** How the slot is changed: its Insert/Eject actions, or PATCH. */
  via: 'actions' | 'patch';
}

export interface PowerWaitOptions {
  timeoutMs?: number;
  pollIntervalMs?: number;
  /** Called after each poll (e.g. to heartbeat a Temporal activity). */
  onPoll?: (state: string | undefined) => void;
}

const TASK_RUNNING = new Set(['New', 'Starting', 'Running', 'Suspended', 'Interrupted', 'Pending', 'Stopping', 'Service']);
const TASK_FAILED = new Set(['Exception', 'Killed', 'Cancelled']);


function normalizePath(path: string): string {
  let p = path.trim();
  if (p !== '' && !p.startsWith('/')) p = `/${p}`;
  while (p.length > 1 && p.endsWith('/')) p = p.slice(0, -1);
  return p;
}

const SERVICE_ROOT_PATHS = new Set(['', '/', '/redfish', '/redfish/v1']);

export class RedfishClient {
  /** `http(s)://host[:port]`, no trailing slash. */
  readonly origin: string;
  readonly username: string;
  private readonly password: string;
  private readonly timeoutMs: number;
  private readonly taskTimeoutMs: number;
  private readonly taskPollMs: number;
  private readonly authMode: RedfishAuthMode;
  private readonly dispatcher: Dispatcher;
  private readonly ownDispatcher: boolean;
  private readonly requestedPath: string;
  private readonly signal?: AbortSignal;

  private auth: { kind: 'none' } | { kind: 'basic'; header: string } | { kind: 'session'; token: string; uri?: string } = { kind: 'none' };
  private closed = false;
  private root: Json = {};
  private system?: string;

  private constructor(opts: RedfishClientOptions) {
    const { endpoint } = opts;
    if (endpoint.transport !== 'http' && endpoint.transport !== 'https') {
      throw new RedfishError('unsupported', `a Redfish client needs an http or https address, not transport "${endpoint.transport}"`);
    }
    const port = endpoint.port === undefined ? '' : `:${endpoint.port}`;
    this.origin = `${endpoint.transport}://${hostForUrl(endpoint.host)}${port}`;
    this.requestedPath = normalizePath(endpoint.path);
    this.username = opts.username;
    this.password = opts.password;
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    this.taskTimeoutMs = opts.taskTimeoutMs ?? 600_000;
    this.taskPollMs = opts.taskPollIntervalMs ?? 1_000;
    this.authMode = opts.auth ?? 'auto';
    this.signal = opts.signal;
    if (opts.dispatcher) {
      this.dispatcher = opts.dispatcher;
      this.ownDispatcher = false;
    } else {
      this.dispatcher = new Agent({
        connect: {
          timeout: this.timeoutMs,
          rejectUnauthorized: opts.disableCertificateVerification !== true,
          ...(opts.ca ? { ca: opts.ca } : {}),
        },
        connections: 4,
        keepAliveTimeout: 10_000,
      });
      this.ownDispatcher = true;
    }
  }

  /**
   * Discovers the service, authenticates and finds the system. Fails with a
   * typed error naming the cause (unreachable, tls, bad-credentials, not-found).
   */
  static async connect(opts: RedfishClientOptions): Promise<RedfishClient> {
    const client = new RedfishClient(opts);
    try {
      await client.init();
      return client;
    } catch (err) {
      await client.close();
      throw err;
    }
  }

  /** The system's resource path, e.g. `/redfish/v1/Systems/1`. */
  get systemPath(): string {
    if (!this.system) throw new RedfishError('not-found', 'the Redfish client is not connected');
    return this.system;
  }

  /** The service root as read at connect. */
  get serviceRoot(): Json {
    return this.root;
  }

  /** How requests are authenticated: `session` (X-Auth-Token) or `basic`. */
  get authMethod(): 'session' | 'basic' | 'none' {
    return this.auth.kind;
  }

  private fail(kind: ConstructorParameters<typeof RedfishError>[0], message: string, status?: number): RedfishError {
    return new RedfishError(kind, redact(message, this.password), status);
  }

  private redacted(err: RedfishError): RedfishError {
    const message = redact(err.message, this.password);
    return message === err.message ? err : new RedfishError(err.kind, message, err.status);
  }

  // ------------------------------------------------------------------ HTTP

  private url(path: string): string {
    if (/^https?:\/\//i.test(path)) {
      const u = new URL(path);
      if (u.origin.toLowerCase() !== this.origin.toLowerCase()) {
        throw this.fail('bmc-fault', `the Redfish BMC at ${this.origin} pointed to another host (${u.origin}); not following it with the BMC credentials`);
      }
      return `${this.origin}${u.pathname}${u.search}`;
    }
    return `${this.origin}${path.startsWith('/') ? '' : '/'}${path}`;
  }

  private authHeaders(): Record<string, string> {
    switch (this.auth.kind) {
      case 'basic':
        return { authorization: this.auth.header };
      case 'session':
        return { 'x-auth-token': this.auth.token };
      default:
        return {};
    }
  }

  /** One request; network failures become typed errors, HTTP statuses are returned as they are. */
  private async raw(
    method: Dispatcher.HttpMethod,
    path: string,
    opts: { body?: unknown; headers?: Record<string, string>; anonymous?: boolean; uncancellable?: boolean } = {},
  ): Promise<RedfishResponse> {
    if (this.closed) throw this.fail('bmc-fault', `the Redfish client for ${this.origin} is closed`);
    const cancel = opts.uncancellable ? undefined : this.signal;
    if (cancel?.aborted) throw abortReason(cancel);
    const url = this.url(path);
    const headers: Record<string, string> = {
      accept: 'application/json',
      'odata-version': '4.0',
      ...(opts.anonymous ? {} : this.authHeaders()),
      ...opts.headers,
    };
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    try {
      const res = await request(url, {
        method,
        headers,
        body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
        dispatcher: this.dispatcher,
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
        signal: cancel ? AbortSignal.any([AbortSignal.timeout(this.timeoutMs), cancel]) : AbortSignal.timeout(this.timeoutMs),
      });
      const text = await res.body.text();
      return { status: res.statusCode, headers: res.headers, body: parseJson(text), text };
    } catch (err) {
      if (cancel?.aborted) throw abortReason(cancel);
      if (err instanceof RedfishError) throw err;
      throw this.redacted(networkError(err, this.origin, this.timeoutMs));
    }
  }

  /**
   * A request that must succeed (2xx): a 401 on a session re-creates the
   * session once and repeats the request; other statuses become typed errors.
   */
  private async send(
    method: Dispatcher.HttpMethod,
    path: string,
    opts: { body?: unknown; headers?: Record<string, string> } = {},
  ): Promise<RedfishResponse> {
    let res = await this.raw(method, path, opts);
    if (res.status === 401 && this.auth.kind === 'session') {
      await this.createSession();
      res = await this.raw(method, path, opts);
    }
    if (res.status >= 400) throw this.redacted(httpError(method, this.url(path), res, this.username));
    return res;
  }

  /** GET a resource as JSON. */
  async get(path: string): Promise<Json> {
    return (await this.send('GET', path)).body;
  }

  private async getWithEtag(path: string): Promise<{ body: Json; etag?: string }> {
    const res = await this.send('GET', path);
    return { body: res.body, etag: header(res, 'etag') ?? str(res.body['@odata.etag']) };
  }

  /**
   * PATCH with `If-Match` when the resource has an ETag. On 412 (or 428 when
   * no ETag was known) the resource is read again and the PATCH repeated
   * once. A 202 is followed through its task monitor.
   */
  async patch(path: string, body: Json, knownEtag?: string): Promise<void> {
    let etag = knownEtag;
    if (etag === undefined) etag = (await this.getWithEtag(path)).etag;
    for (let attempt = 0; ; attempt++) {
      const headers: Record<string, string> = etag ? { 'if-match': etag } : {};
      let res = await this.raw('PATCH', path, { body, headers });
      if (res.status === 401 && this.auth.kind === 'session') {
        await this.createSession();
        res = await this.raw('PATCH', path, { body, headers });
      }
      if ((res.status === 412 || res.status === 428) && attempt === 0) {
        etag = (await this.getWithEtag(path)).etag;
        continue;
      }
      if (res.status === 412) {
        throw this.fail(
          'bmc-fault',
          `Redfish PATCH ${this.url(path)}: HTTP 412 twice: the resource changed between reading its ETag and writing; try again`,
          412,
        );
      }
      if (res.status >= 400) throw this.redacted(httpError('PATCH', this.url(path), res, this.username));
      if (res.status === 202) await this.followTask(res, `PATCH ${path}`);
      return;
    }
  }

  /** POST an action; a 202 is followed through its task monitor. Returns the final response body. */
  async postAction(target: string, body: Json): Promise<Json> {
    const res = await this.send('POST', target, { body });
    if (res.status === 202) return this.followTask(res, `POST ${target}`);
    return res.body;
  }

  /**
   * Follows an asynchronous operation: polls the task monitor (the 202's
   * Location, or the Task the body names) until it stops answering 202 and
   * any Task it returns is finished. A task that ends in Exception, Killed or
   * Cancelled, or with TaskStatus Critical, is a `bmc-fault` carrying its messages.
   */
  private async followTask(accepted: RedfishResponse, what: string): Promise<Json> {
    const monitor = header(accepted, 'location') ?? odataId(accepted.body);
    if (!monitor) return accepted.body;
    const deadline = Date.now() + this.taskTimeoutMs;
    let last: RedfishResponse = accepted;
    for (;;) {
      const retryAfter = Number(header(last, 'retry-after'));
      const wait = Number.isFinite(retryAfter) && retryAfter > 0 ? Math.min(retryAfter * 1000, 10_000) : this.taskPollMs;
      if (Date.now() + wait > deadline) {
        const stateNow = str(last.body.TaskState);
        throw this.fail('timeout', `Redfish ${what}: task ${monitor} still ${stateNow ?? 'running'} after ${Math.round(this.taskTimeoutMs / 1000)} s`);
      }
      await sleep(wait, this.signal);
      let res = await this.raw('GET', monitor);
      if (res.status === 401 && this.auth.kind === 'session') {
        await this.createSession();
        res = await this.raw('GET', monitor);
      }
      last = res;
      if (res.status === 404) {
        throw this.fail('bmc-fault', `Redfish ${what}: task monitor ${monitor} disappeared (HTTP 404) before reporting completion`, 404);
      }
      if (res.status >= 400) throw this.redacted(httpError('GET', this.url(monitor), res, this.username));
      const taskState = str(res.body.TaskState);
      if (res.status === 202 || (taskState && TASK_RUNNING.has(taskState))) continue;
      if (taskState && TASK_FAILED.has(taskState)) {
        throw this.fail('bmc-fault', `Redfish ${what}: task ${monitor} ended ${taskState}: ${taskMessages(res.body) || 'no message'}`);
      }
      if (taskState === 'Completed' && str(res.body.TaskStatus) === 'Critical') {
        throw this.fail('bmc-fault', `Redfish ${what}: task ${monitor} completed with status Critical: ${taskMessages(res.body) || 'no message'}`);
      }
      return res.body;
    }
  }

  // ----------------------------------------------------------- connect

  private async init(): Promise<void> {
    this.root = await this.readServiceRoot();
    await this.authenticate();
    this.system = await this.resolveSystem();
  }

  private async readServiceRoot(): Promise<Json> {
    let res = await this.raw('GET', '/redfish/v1/', { anonymous: true });
    if (res.status === 401 || res.status === 403) {
      // The service root must be readable without credentials, but some services protect it.
      this.useBasic();
      res = await this.raw('GET', '/redfish/v1/');
    }
    if (res.status === 404) {
      throw this.fail('not-found', `no Redfish service at ${this.origin}: GET /redfish/v1/ answered HTTP 404`, 404);
    }
    if (res.status >= 400) throw this.redacted(httpError('GET', this.url('/redfish/v1/'), res, this.username));
    if (!res.body.Systems && !res.body.RedfishVersion) {
      throw this.fail('bmc-fault', `${this.origin}/redfish/v1/ is not a Redfish service root (no Systems or RedfishVersion)`);
    }
    return res.body;
  }

  private useBasic(): void {
    const token = Buffer.from(`${this.username}:${this.password}`).toString('base64');
    this.auth = { kind: 'basic', header: `Basic ${token}` };
  }

  private sessionsPath(): string | undefined {
    const links = obj(this.root.Links);
    const fromLinks = odataId(links.Sessions);
    if (fromLinks) return fromLinks;
    const service = odataId(this.root.SessionService);
    return service ? `${service.replace(/\/$/, '')}/Sessions` : undefined;
  }

  private async authenticate(): Promise<void> {
    if (this.authMode === 'basic') {
      this.useBasic();
      return;
    }
    const sessions = this.sessionsPath();
    if (!sessions) {
      if (this.authMode === 'session') {
        throw this.fail('unsupported', `the Redfish service at ${this.origin} offers no SessionService (session auth was required)`);
      }
      this.useBasic();
      return;
    }
    try {
      await this.createSession();
    } catch (err) {
      const unsupportedSessions =
        err instanceof RedfishError && (err.kind === 'unsupported' || err.kind === 'not-found' || err.kind === 'rejected' || err.kind === 'bmc-fault');
      if (this.authMode === 'auto' && unsupportedSessions) {
        this.useBasic();
        return;
      }
      throw err;
    }
  }

  /** POST a new session; the token replaces any previous one. */
  private async createSession(): Promise<void> {
    const path = this.sessionsPath();
    if (!path) throw this.fail('unsupported', `the Redfish service at ${this.origin} offers no SessionService`);
    const res = await this.raw('POST', path, {
      anonymous: true,
      body: { UserName: this.username, Password: this.password },
    });
    if (res.status >= 400) throw this.redacted(httpError('POST', this.url(path), res, this.username));
    const token = header(res, 'x-auth-token');
    if (!token) {
      throw this.fail('unsupported', `Redfish POST ${this.url(path)}: HTTP ${res.status} without an X-Auth-Token header`, res.status);
    }
    this.auth = { kind: 'session', token, uri: header(res, 'location') ?? odataId(res.body) };
  }

  private async collectionMembers(path: string): Promise<string[]> {
    const ids: string[] = [];
    let next: string | undefined = path;
    for (let page = 0; next && page < 100; page++) {
      const body = await this.get(next);
      for (const m of arr(body.Members)) {
        const id = odataId(m);
        if (id) ids.push(id);
      }
      next = str(body['Members@odata.nextLink']);
    }
    return ids;
  }

  private async resolveSystem(): Promise<string> {
    const systems = odataId(this.root.Systems) ?? '/redfish/v1/Systems';
    if (SERVICE_ROOT_PATHS.has(this.requestedPath)) {
      const members = await this.collectionMembers(systems);
      if (members.length === 1) return members[0]!;
      if (members.length === 0) throw this.fail('not-found', `the Redfish service at ${this.origin} lists no systems in ${systems}`);
      throw this.fail(
        'not-found',
        `the Redfish service at ${this.origin} has ${members.length} systems (${members.join(', ')}); name one in the BMC address`,
      );
    }
    const res = await this.raw('GET', this.requestedPath);
    if (res.status === 404) {
      let known = '';
      try {
        known = `; it has ${(await this.collectionMembers(systems)).join(', ') || 'no systems'}`;
      } catch {
        // listing is only a hint
      }
      throw this.fail('not-found', `system ${this.requestedPath} not found on the Redfish BMC at ${this.origin} (HTTP 404)${known}`, 404);
    }
    if (res.status >= 400) throw this.redacted(httpError('GET', this.url(this.requestedPath), res, this.username));
    const type = str(res.body['@odata.type']);
    if (type && !type.includes('ComputerSystem')) {
      throw this.fail('not-found', `${this.url(this.requestedPath)} is a ${type}, not a ComputerSystem`);
    }
    return str(res.body['@odata.id']) ? normalizePath(str(res.body['@odata.id'])!) : this.requestedPath;
  }

  /** Deletes the session (if any) and releases connections. Safe to call twice. */
  async close(): Promise<void> {
    if (this.closed) return;
    const auth = this.auth;
    if (auth.kind === 'session' && auth.uri) {
      try {
        // Ends the session even for a cancelled call: BMCs allow only a few at once.
        await this.raw('DELETE', auth.uri, { uncancellable: true });
      } catch {
        // the session expires on its own
      }
    }
    this.closed = true;
    this.auth = { kind: 'none' };
    if (this.ownDispatcher) await (this.dispatcher as Agent).close().catch(() => undefined);
  }

  // ------------------------------------------------------------- system

  async getSystem(): Promise<Json> {
    return this.get(this.systemPath);
  }

  async getPowerState(): Promise<RedfishPowerState | undefined> {
    return str((await this.getSystem()).PowerState) as RedfishPowerState | undefined;
  }

  /** The reset types the system allows (AllowableValues or its ActionInfo); undefined when it does not say. */
  async allowedResetTypes(system?: Json): Promise<string[] | undefined> {
    const action = obj(obj((system ?? (await this.getSystem())).Actions)['#ComputerSystem.Reset']);
    const listed = action['ResetType@Redfish.AllowableValues'];
    if (Array.isArray(listed)) return listed.filter((v): v is string => typeof v === 'string');
    const info = str(action['@Redfish.ActionInfo']);
    if (info) {
      const param = arr((await this.get(info)).Parameters)
        .map(obj)
        .find((p) => p.Name === 'ResetType');
      if (param && Array.isArray(param.AllowableValues)) {
        return param.AllowableValues.filter((v): v is string => typeof v === 'string');
      }
    }
    return undefined;
  }

  /** ComputerSystem.Reset with a type the system allows; `unsupported` otherwise. */
  async reset(type: ResetType): Promise<void> {
    const system = await this.getSystem();
    const action = obj(obj(system.Actions)['#ComputerSystem.Reset']);
    const target = str(action.target);
    if (!target) throw this.fail('unsupported', `system ${this.systemPath} on ${this.origin} offers no ComputerSystem.Reset action`);
    const allowed = await this.allowedResetTypes(system);
    if (allowed && !allowed.includes(type)) {
      throw this.fail(
        'unsupported',
        `system ${this.systemPath} on ${this.origin} does not allow ResetType ${type} (it allows ${allowed.join(', ') || 'none'})`,
      );
    }
    await this.postAction(target, { ResetType: type });
  }

  /** Polls PowerState until it is `target`; `timeout` error otherwise. */
  async waitForPowerState(target: 'On' | 'Off', opts: PowerWaitOptions = {}): Promise<void> {
    const timeoutMs = opts.timeoutMs ?? 120_000;
    const pollMs = opts.pollIntervalMs ?? 1_000;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const state = await this.getPowerState();
      opts.onPoll?.(state);
      if (state === target) return;
      if (Date.now() + pollMs > deadline) {
        throw this.fail('timeout', `system ${this.systemPath} on ${this.origin} is still ${state ?? 'in an unknown power state'} ${Math.round(timeoutMs / 1000)} s after asking for ${target}`);
      }
      await sleep(pollMs, this.signal);
    }
  }

  /** Sets the boot source override; checks the target (and mode) against what the system allows. */
  async setBootOverride(override: BootOverride): Promise<void> {
    const { body: system, etag } = await this.getWithEtag(this.systemPath);
    const boot = obj(system.Boot);
    if (!('BootSourceOverrideTarget' in boot)) {
      throw this.fail('unsupported', `system ${this.systemPath} on ${this.origin} has no boot source override (Boot.BootSourceOverrideTarget)`);
    }
    const targets = boot['BootSourceOverrideTarget@Redfish.AllowableValues'];
    if (Array.isArray(targets) && !targets.includes(override.target)) {
      throw this.fail('unsupported', `system ${this.systemPath} on ${this.origin} cannot boot from ${override.target} (it allows ${targets.join(', ')})`);
    }
    const patch: Json = {
      BootSourceOverrideTarget: override.target,
      BootSourceOverrideEnabled: override.enabled ?? 'Once',
    };
    if (override.mode && override.mode !== boot.BootSourceOverrideMode) {
      if (!('BootSourceOverrideMode' in boot)) {
        throw this.fail('unsupported', `system ${this.systemPath} on ${this.origin} does not expose a boot mode (Boot.BootSourceOverrideMode), cannot set ${override.mode}`);
      }
      const modes = boot['BootSourceOverrideMode@Redfish.AllowableValues'];
      if (Array.isArray(modes) && !modes.includes(override.mode)) {
        throw this.fail('unsupported', `system ${this.systemPath} on ${this.origin} does not allow boot mode ${override.mode} (it allows ${modes.join(', ')})`);
      }
      patch.BootSourceOverrideMode = override.mode;
    }
    if (override.httpBootUri !== undefined) patch.HttpBootUri = override.httpBootUri;
    await this.patch(this.systemPath, { Boot: patch }, etag);
  }

  // ------------------------------------------------------- virtual media

  private async virtualMediaCollection(system: Json): Promise<string | undefined> {
    const own = odataId(system.VirtualMedia);
    if (own) return own;
    for (const manager of arr(obj(system.Links).ManagedBy)) {
      const path = odataId(manager);
      if (!path) continue;
      const vm = odataId((await this.get(path)).VirtualMedia);
      if (vm) return vm;
    }
    return undefined;
  }

  /** The CD-capable slot (MediaTypes contains CD or DVD); `unsupported` when there is none. */
  async getVirtualMedia(): Promise<VirtualMediaState & { etag?: string; actions: Json }> {
    const system = await this.getSystem();
    const collection = await this.virtualMediaCollection(system);
    if (!collection) throw this.fail('unsupported', `system ${this.systemPath} on ${this.origin} has no virtual media`);
    for (const path of await this.collectionMembers(collection)) {
      const { body, etag } = await this.getWithEtag(path);
      const types = arr(body.MediaTypes).filter((t): t is string => typeof t === 'string');
      if (types.includes('CD') || types.includes('DVD')) {
        const actions = obj(body.Actions);
        return {
          path,
          id: str(body.Id),
          mediaTypes: types,
          image: str(body.Image),
          inserted: body.Inserted === true,
          via: str(obj(actions['#VirtualMedia.InsertMedia']).target) ? 'actions' : 'patch',
          etag,
          actions,
        };
      }
    }
    throw this.fail('unsupported', `system ${this.systemPath} on ${this.origin} has no CD/DVD virtual media slot in ${collection}`);
  }

  /** Inserts an ISO (by URL) into the CD slot, ejecting another image first. */
  async insertMedia(imageUrl: string, opts: { writeProtected?: boolean } = {}): Promise<void> {
    let slot = await this.getVirtualMedia();
    if (slot.inserted && slot.image === imageUrl) return;
    if (slot.inserted || slot.image) {
      await this.ejectMedia();
      slot = await this.getVirtualMedia();
    }
    const writeProtected = opts.writeProtected ?? true;
    const insert = str(obj(slot.actions['#VirtualMedia.InsertMedia']).target);
    if (insert) {
      try {
        await this.postAction(insert, { Image: imageUrl, Inserted: true, WriteProtected: writeProtected });
      } catch (err) {
        // Some BMCs reject the optional parameters; Image alone is mandatory.
        if (!(err instanceof RedfishError) || (err.kind !== 'rejected' && err.kind !== 'unsupported') || err.status !== 400) throw err;
        await this.postAction(insert, { Image: imageUrl });
      }
    } else {
      await this.patch(slot.path, { Image: imageUrl, Inserted: true, WriteProtected: writeProtected }, slot.etag);
    }
    const after = await this.getVirtualMedia();
    if (!after.inserted) {
      throw this.fail('bmc-fault', `Redfish BMC at ${this.origin} accepted the image for ${slot.path} but the slot shows nothing inserted`);
    }
  }

  /** Ejects whatever is in the CD slot (nothing to do when it is empty). */
  async ejectMedia(): Promise<void> {
    const slot = await this.getVirtualMedia();
    if (!slot.inserted && !slot.image) return;
    const eject = str(obj(slot.actions['#VirtualMedia.EjectMedia']).target);
    if (eject) await this.postAction(eject, {});
    else await this.patch(slot.path, { Image: null, Inserted: false }, slot.etag);
  }

  // ----------------------------------------------------------- inventory

  /** Members of an optional collection (absent or 404 → none), each read in full. */
  private async readMembers(collection: string | undefined): Promise<Json[]> {
    if (!collection) return [];
    let paths: string[];
    try {
      paths = await this.collectionMembers(collection);
    } catch (err) {
      if (err instanceof RedfishError && (err.kind === 'not-found' || err.kind === 'unsupported')) return [];
      throw err;
    }
    const out: Json[] = [];
    for (let i = 0; i < paths.length; i += 4) {
      const batch = await Promise.all(paths.slice(i, i + 4).map((p) => this.get(p)));
      out.push(...batch);
    }
    return out;
  }

  /** Processors, memory, NICs, drives, vendor and BIOS version as Metal3's `status.hardware`. */
  async getInventory(): Promise<HardwareDetails> {
    const system = await this.getSystem();
    const [processors, memory, ethernetInterfaces, storage, simpleStorage] = await Promise.all([
      this.readMembers(odataId(system.Processors)),
      this.readMembers(odataId(system.Memory)),
      this.readMembers(odataId(system.EthernetInterfaces)),
      this.readMembers(odataId(system.Storage)),
      this.readMembers(odataId(system.SimpleStorage)),
    ]);
    const drives: Json[] = [];
    for (const s of storage) {
      const refs = arr(s.Drives).map(odataId).filter((p): p is string => p !== undefined);
      for (const p of refs) {
        try {
          drives.push(await this.get(p));
        } catch (err) {
          if (!(err instanceof RedfishError && err.kind === 'not-found')) throw err;
        }
      }
    }
    return hardwareFromRedfish({ system, processors, memory, ethernetInterfaces, drives, simpleStorage });
  }
}

function taskMessages(task: Json): string {
  return redfishErrorDetail({ body: { '@Message.ExtendedInfo': task.Messages }, text: '' });
}
