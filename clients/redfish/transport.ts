/**
 * The Redfish client's transport: one undici Agent per BMC (TLS verified
 * unless `disableCertificateVerification`, a timeout on every request),
 * requests with the current credentials (a 401 on a session re-creates it
 * once), PATCH with `If-Match` and one refresh-and-retry on 412, and 202
 * Accepted answers followed through their task monitor. Errors are
 * `RedfishError`s whose messages never carry the password.
 */
import { Agent, request, type Dispatcher } from 'undici';
import { hostForUrl } from '../../model/bmc';
import { abortReason, sleep } from '../bmc/abort';
import { RedfishError, redact, type BmcErrorKind } from '../bmc/errors';
import { header, httpError, networkError, odataId, parseJson, redfishErrorDetail, str, type Json, type RedfishResponse } from './http';
import type { RedfishAuthMode, RedfishClientOptions } from './types';

const TASK_RUNNING = new Set(['New', 'Starting', 'Running', 'Suspended', 'Interrupted', 'Pending', 'Stopping', 'Service']);
const TASK_FAILED = new Set(['Exception', 'Killed', 'Cancelled']);

export { sleep };

export function normalizePath(path: string): string {
  let p = path.trim();
  if (p !== '' && !p.startsWith('/')) p = `/${p}`;
  while (p.length > 1 && p.endsWith('/')) p = p.slice(0, -1);
  return p;
}

export abstract class RedfishTransport {
  /** `http(s)://host[:port]`, no trailing slash. */
  readonly origin: string;
  readonly username: string;
  protected readonly password: string;
  private readonly timeoutMs: number;
  private readonly taskTimeoutMs: number;
  private readonly taskPollMs: number;
  protected readonly authMode: RedfishAuthMode;
  protected readonly dispatcher: Dispatcher;
  protected readonly ownDispatcher: boolean;
  protected readonly requestedPath: string;
  /** Cancels every request and wait of this client (a cancelled activity). */
  protected readonly signal?: AbortSignal;

  protected auth: { kind: 'none' } | { kind: 'basic'; header: string } | { kind: 'session'; token: string; uri?: string } = { kind: 'none' };
  protected closed = false;

  protected constructor(opts: RedfishClientOptions) {
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

  protected fail(kind: ConstructorParameters<typeof RedfishError>[0], message: string, status?: number): RedfishError {
    return new RedfishError(kind, redact(message, this.password), status);
  }

  protected redacted(err: RedfishError): RedfishError {
    const message = redact(err.message, this.password);
    return message === err.message ? err : new RedfishError(err.kind, message, err.status);
  }

  // ------------------------------------------------------------------ HTTP

  protected url(path: string): string {
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
  protected async raw(
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
    let answer: RedfishResponse;
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
      answer = { status: res.statusCode, headers: res.headers, body: parseJson(text), text };
    } catch (err) {
      if (cancel?.aborted) throw abortReason(cancel);
      if (err instanceof RedfishError) throw err;
      throw this.redacted(networkError(err, this.origin, this.timeoutMs));
    }
    // An error status may carry any body (httpError quotes it); a success must be readable, or nothing is known.
    if (answer.status >= 200 && answer.status < 300 && !readableBody(answer.text)) {
      const excerpt = JSON.stringify(answer.text.replace(/\s+/g, ' ').trim().slice(0, 80));
      throw this.fail('bad-answer', `Redfish ${method} ${url}: HTTP ${answer.status} with a body that is not a JSON object (${excerpt})`, answer.status);
    }
    return answer;
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

  protected async getWithEtag(path: string): Promise<{ body: Json; etag?: string }> {
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

  /**
   * POST an action; a 202 is followed through its task monitor. Returns the
   * final response body. `followLocation`: a 200/204 that names a task (a
   * Location header, or a Task body) is followed too: some BMCs answer an
   * update that way. `taskFailKind`: the kind of error a failed task is
   * (default `bmc-fault`).
   */
  async postAction(target: string, body: Json, opts: { followLocation?: boolean; taskFailKind?: BmcErrorKind } = {}): Promise<Json> {
    const res = await this.send('POST', target, { body });
    const namesTask = opts.followLocation === true && (header(res, 'location') !== undefined || str(res.body.TaskState) !== undefined);
    if (res.status === 202 || namesTask) return this.followTask(res, `POST ${target}`, opts.taskFailKind);
    return res.body;
  }

  /**
   * POSTs an action and returns the BMC's answer without following the task it
   * starts: the caller records the task (`monitor`, the 202's Location or the
   * Task the body names) before waiting on it, so a retry can follow it instead
   * of sending the action again.
   */
  async startAction(target: string, body: Json): Promise<{ status: number; body: Json; monitor?: string }> {
    const res = await this.send('POST', target, { body });
    const named = res.status === 202 || str(res.body.TaskState) !== undefined;
    const monitor = header(res, 'location') ?? (named ? odataId(res.body) : undefined);
    return { status: res.status, body: res.body, ...(monitor ? { monitor } : {}) };
  }

  /**
   * Follows the task at `monitor` (a task monitor or the Task itself) until it
   * ends, as followTask does. `outageMs`: a BMC that stops answering (refused,
   * no answer, HTTP 5xx) is waited for up to that long in a row, polling on: a
   * BMC resets itself while it flashes its own firmware, and the task it
   * answered with is still the one to follow when it is back.
   */
  async followTaskAt(monitor: string, what: string, opts: { failKind?: BmcErrorKind; outageMs?: number } = {}): Promise<Json> {
    return this.pollTask(monitor, undefined, what, opts.failKind ?? 'bmc-fault', opts.outageMs ?? 0);
  }

  /**
   * Follows an asynchronous operation: polls the task monitor (the 202's
   * Location, or the Task the body names) until it stops answering 202 and
   * any Task it returns is finished. A task that ends in Exception, Killed or
   * Cancelled, or with TaskStatus Critical, is a `failKind` error carrying its messages.
   */
  private async followTask(accepted: RedfishResponse, what: string, failKind: BmcErrorKind = 'bmc-fault'): Promise<Json> {
    const monitor = header(accepted, 'location') ?? odataId(accepted.body);
    if (!monitor) return accepted.body;
    return this.pollTask(monitor, accepted, what, failKind, 0);
  }

  private async pollTask(monitor: string, accepted: RedfishResponse | undefined, what: string, failKind: BmcErrorKind, outageMs: number): Promise<Json> {
    const deadline = Date.now() + this.taskTimeoutMs;
    let last: RedfishResponse | undefined = accepted;
    let downSince: number | undefined;
    for (;;) {
      const retryAfter = Number(last ? header(last, 'retry-after') : undefined);
      const wait = last === undefined ? 0 : Number.isFinite(retryAfter) && retryAfter > 0 ? Math.min(retryAfter * 1000, 10_000) : this.taskPollMs;
      if (Date.now() + wait > deadline) {
        const stateNow = last ? str(last.body.TaskState) : undefined;
        throw this.fail('timeout', `Redfish ${what}: task ${monitor} still ${stateNow ?? 'running'} after ${Math.round(this.taskTimeoutMs / 1000)} s`);
      }
      if (wait > 0) await sleep(wait, this.signal);
      let res: RedfishResponse;
      try {
        res = await this.raw('GET', monitor);
        if (res.status === 401 && this.auth.kind === 'session') {
          await this.createSession();
          res = await this.raw('GET', monitor);
        }
        if (res.status >= 500) throw this.redacted(httpError('GET', this.url(monitor), res, this.username));
      } catch (err) {
        const outage = err instanceof RedfishError && (err.kind === 'unreachable' || (err.kind === 'bmc-fault' && (err.status ?? 0) >= 500));
        if (!outage || this.signal?.aborted) throw err;
        downSince ??= Date.now();
        if (Date.now() - downSince >= outageMs) throw err;
        // Polled again at the usual pace: no answer to take a Retry-After from.
        last = { status: 0, headers: {}, body: {}, text: '' };
        continue;
      }
      downSince = undefined;
      last = res;
      if (res.status === 404) {
        throw this.fail('bmc-fault', `Redfish ${what}: task monitor ${monitor} disappeared (HTTP 404) before reporting completion`, 404);
      }
      if (res.status >= 400) throw this.redacted(httpError('GET', this.url(monitor), res, this.username));
      const taskState = str(res.body.TaskState);
      if (res.status === 202 || (taskState && TASK_RUNNING.has(taskState))) continue;
      if (taskState && TASK_FAILED.has(taskState)) {
        throw this.fail(failKind, `Redfish ${what}: task ${monitor} ended ${taskState}: ${taskMessages(res.body) || 'no message'}`);
      }
      if (taskState === 'Completed' && str(res.body.TaskStatus) === 'Critical') {
        throw this.fail(failKind, `Redfish ${what}: task ${monitor} completed with status Critical: ${taskMessages(res.body) || 'no message'}`);
      }
      return res.body;
    }
  }

  /** POSTs a new session; the token replaces any previous one. */
  protected abstract createSession(): Promise<void>;
}

/** Empty, or a JSON object: what a Redfish success carries. Anything else (an HTML page from a proxy, a truncated body) cannot be read. */
function readableBody(text: string): boolean {
  if (text.trim() === '') return true;
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null && !Array.isArray(v);
  } catch {
    return false;
  }
}

function taskMessages(task: Json): string {
  return redfishErrorDetail({ body: { '@Message.ExtendedInfo': task.Messages }, text: '' });
}
