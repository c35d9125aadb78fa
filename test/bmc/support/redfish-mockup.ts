/**
 * Serves the DMTF public rack-mount Redfish mockup (../shared/redfish-mockups,
 * read at test time, never copied) on 127.0.0.1, with the behaviour a real
 * BMC has and sushy-tools lacks, under test control:
 *
 * - GET of any resource from the tree (`/redfish/v1/X` = `X/index.json`),
 *   with an ETag header; PATCHes are kept in memory, never written.
 * - Auth: the service root (and OData documents) are open; everything else
 *   needs a session token (POST SessionService/Sessions → X-Auth-Token and
 *   Location, DELETE ends it) or HTTP basic; 401 otherwise.
 * - PATCH needs `If-Match` with the current ETag (428 without, 412 when it
 *   changed); `concurrentChanges` makes the next PATCHes find the resource
 *   changed by someone else.
 * - ComputerSystem.Reset checks the mockup's AllowableValues and answers 202
 *   with a task monitor that reports Running for `taskPolls` polls before the
 *   reset takes effect (or ends in Exception when `failNextTask` is set).
 * - `failNext` injects one error answer; `hang` stops answering at all.
 *
 * Kept honest with the DMTF redfish-protocol-validator (PyPI): its session,
 * basic-auth, X-Auth-Token, WWW-Authenticate, ETag-format and
 * read/write-requires-auth assertions pass against this server; what it
 * still reports (284 pass, 16 fail: no Allow on GET, Link or Cache-Control headers, no HTTPS redirect on
 * the plain-HTTP instance, no query-parameter validation, no account
 * creation) is outside what the client relies on.
 *
 * Every request is recorded in `log` so tests can check what the client sent.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import { isAbsolute, join, resolve } from 'node:path';
import { execFileSync } from 'node:child_process';
import { REPO_ROOT } from '../../../config/env';

type Json = Record<string, unknown>;

/**
 * The DMTF tree, read where it lives (never copied into the repository): `../shared` next to the
 * checkout, or next to the checkout it was cloned from (a CI clone in a temporary directory).
 */
export const MOCKUP_ROOT = findMockupRoot();

function findMockupRoot(): string {
  const under = (repo: string) => resolve(repo, '..', 'shared', 'redfish-mockups', 'public-rackmount1');
  const candidates = [under(REPO_ROOT)];
  try {
    const origin = execFileSync('git', ['-C', REPO_ROOT, 'config', '--get', 'remote.origin.url'], { encoding: 'utf8' }).trim();
    if (isAbsolute(origin)) candidates.push(under(origin));
  } catch {
    // Not a clone: only the checkout's own neighbour.
  }
  return candidates.find((c) => existsSync(join(c, 'index.json'))) ?? candidates[0]!;
}
export const MOCKUP_SYSTEM = '/redfish/v1/Systems/437XR1138R2';

export interface MockupOptions {
  root?: string;
  username?: string;
  password?: string;
  /** `on` (default): sessions work; `broken`: advertised but POST answers 405. */
  sessions?: 'on' | 'broken';
  /** Accept HTTP basic auth (default true). */
  basicAuth?: boolean;
  /** Reset actions answer 202 + task monitor (default true); false: 204 at once. */
  asyncActions?: boolean;
  /** Monitor polls answered 202/Running before the task completes (default 2). */
  taskPolls?: number;
  tls?: { key: string; cert: string };
}

export interface RecordedRequest {
  method: string;
  path: string;
  auth: 'token' | 'basic' | 'none';
  ifMatch?: string;
  status: number;
  body?: unknown;
}

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function merge(target: Json, patch: Json): Json {
  const out: Json = { ...target };
  for (const [k, v] of Object.entries(patch)) {
    out[k] = isObject(v) && isObject(out[k]) ? merge(out[k] as Json, v) : v;
  }
  return out;
}

function redfishError(status: number, messageId: string, message: string): { status: number; body: Json } {
  return {
    status,
    body: {
      error: {
        code: messageId,
        message,
        '@Message.ExtendedInfo': [{ '@odata.type': '#Message.v1_1_1.Message', MessageId: messageId, Message: message, Severity: 'Critical' }],
      },
    },
  };
}

export interface Task {
  id: string;
  pollsLeft: number;
  fail?: string;
  /** Runs when the task completes; a string returned is the task's failure (it ends in Exception). */
  apply: () => void | string;
  /** The task stays Running until this holds (e.g. an image download finished). */
  ready?: () => boolean;
  state: 'Running' | 'Completed' | 'Exception';
}

/** Extra routes (redfish-mockup-firmware.ts): true when the request was answered. */
export type MockupRoute = (
  m: RedfishMockup,
  req: { method: string; path: string; body: unknown },
  answer: (status: number, json?: Json, headers?: Record<string, string>) => void,
) => boolean;

export class RedfishMockup {
  readonly root: string;
  readonly username: string;
  readonly password: string;
  readonly log: RecordedRequest[] = [];
  /** token → session id */
  readonly sessions = new Map<string, string>();
  /** The next N PATCHes find the resource changed by another client. */
  concurrentChanges = 0;
  /** The next task ends in Exception with this message. */
  failNextTask?: string;
  /** The next request matching is answered with this error instead. */
  failNext?: { method?: string; pathIncludes?: string; status: number; body: Json };
  /** Accept connections but never answer. */
  hang = false;
  taskPolls: number;
  asyncActions: boolean;

  /** Extra routes, tried before the built-in ones. */
  readonly routes: MockupRoute[] = [];
  /** Called when a reset powers the system on or restarts it (a BIOS applies its pending settings then). */
  readonly onBoot: Array<(systemPath: string) => void> = [];

  private readonly overlay = new Map<string, Json>();
  private readonly tasks = new Map<string, Task>();
  private readonly sockets = new Set<Socket>();
  private server?: Server;
  private nextId = 1;
  private readonly opts: MockupOptions;
  port = 0;

  constructor(opts: MockupOptions = {}) {
    this.opts = opts;
    this.root = opts.root ?? MOCKUP_ROOT;
    if (!existsSync(join(this.root, 'index.json'))) {
      throw new Error(`Redfish mockup not found at ${this.root} (expected the DMTF public-rackmount1 tree in ../shared/redfish-mockups)`);
    }
    this.username = opts.username ?? 'admin';
    this.password = opts.password ?? 'password';
    this.taskPolls = opts.taskPolls ?? 2;
    this.asyncActions = opts.asyncActions ?? true;
  }

  get url(): string {
    return `${this.opts.tls ? 'https' : 'http'}://127.0.0.1:${this.port}`;
  }

  async start(): Promise<this> {
    const handler = (req: IncomingMessage, res: ServerResponse) => void this.handle(req, res);
    this.server = this.opts.tls ? createHttpsServer({ key: this.opts.tls.key, cert: this.opts.tls.cert }, handler) : createHttpServer(handler);
    this.server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((resolveListen) => this.server!.listen(0, '127.0.0.1', resolveListen));
    this.port = (this.server.address() as { port: number }).port;
    return this;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }

  /** Current state of a resource (file plus in-memory PATCHes), or undefined. */
  resource(path: string): Json | undefined {
    const p = this.normalize(path);
    const patched = this.overlay.get(p);
    if (patched) return patched;
    if (p.split('/').includes('..')) return undefined;
    const rel = p === '/redfish/v1' ? '' : p.slice('/redfish/v1/'.length);
    const file = join(this.root, rel, 'index.json');
    if (!existsSync(file)) return undefined;
    return JSON.parse(readFileSync(file, 'utf8')) as Json;
  }

  setResource(path: string, value: Json): void {
    this.overlay.set(this.normalize(path), value);
  }

  etag(path: string): string | undefined {
    const r = this.resource(path);
    return r ? `"${createHash('sha1').update(JSON.stringify(r)).digest('hex').slice(0, 16)}"` : undefined;
  }

  /** A task (its monitor is `/redfish/v1/TaskService/TaskMonitors/<id>`); takes `failNextTask`. */
  addTask(apply: Task['apply'], ready?: Task['ready']): string {
    const id = String(this.nextId++);
    const task: Task = { id, pollsLeft: this.taskPolls, apply, ready, state: 'Running' };
    if (this.failNextTask) {
      task.fail = this.failNextTask;
      this.failNextTask = undefined;
    }
    this.tasks.set(id, task);
    return id;
  }

  /** Forget every session (as if they timed out). */
  expireSessions(): void {
    this.sessions.clear();
  }

  requests(method?: string, pathIncludes?: string): RecordedRequest[] {
    return this.log.filter((r) => (!method || r.method === method) && (!pathIncludes || r.path.includes(pathIncludes)));
  }

  private normalize(path: string): string {
    let p = decodeURIComponent(path.split('?')[0] ?? '');
    while (p.length > 1 && p.endsWith('/')) p = p.slice(0, -1);
    return p;
  }

  private authOf(req: IncomingMessage): RecordedRequest['auth'] | 'bad' {
    const token = req.headers['x-auth-token'];
    if (typeof token === 'string') return this.sessions.has(token) ? 'token' : 'bad';
    const basic = req.headers.authorization;
    if (typeof basic === 'string' && basic.startsWith('Basic ')) {
      if (this.opts.basicAuth === false) return 'bad';
      const [user, ...rest] = Buffer.from(basic.slice(6), 'base64').toString().split(':');
      return user === this.username && rest.join(':') === this.password ? 'basic' : 'bad';
    }
    return 'none';
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (this.hang) return; // never answer
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString();
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = text;
    }
    const method = req.method ?? 'GET';
    const path = this.normalize(req.url ?? '/');
    const auth = this.authOf(req);
    const ifMatch = typeof req.headers['if-match'] === 'string' ? req.headers['if-match'] : undefined;
    const answer = (status: number, json?: Json, headers: Record<string, string> = {}) => {
      this.log.push({ method, path, auth: auth === 'bad' ? 'none' : auth, ifMatch, status, body });
      const payload = json === undefined ? '' : JSON.stringify(json);
      res.writeHead(status, { ...(payload ? { 'content-type': 'application/json' } : {}), 'odata-version': '4.0', ...headers });
      res.end(payload);
    };
    const error = (e: { status: number; body: Json }, headers?: Record<string, string>) => answer(e.status, e.body, headers);

    const injected = this.failNext;
    if (injected && (!injected.method || injected.method === method) && (!injected.pathIncludes || path.includes(injected.pathIncludes))) {
      this.failNext = undefined;
      answer(injected.status, injected.body);
      return;
    }

    const odataVersion = req.headers['odata-version'];
    if (typeof odataVersion === 'string' && odataVersion !== '4.0') {
      error(redfishError(412, 'Base.1.0.PreconditionFailed', `OData-Version ${odataVersion} is not supported; this service speaks 4.0`));
      return;
    }

    const open = path === '/redfish' || path === '/redfish/v1' || path === '/redfish/v1/odata' || path === '/redfish/v1/$metadata';
    if (path === '/redfish/v1/$metadata' && method === 'GET') {
      this.log.push({ method, path, auth: auth === 'bad' ? 'none' : auth, status: 200 });
      res.writeHead(200, { 'content-type': 'application/xml', 'odata-version': '4.0' });
      res.end(readFileSync(join(this.root, '$metadata', 'index.xml')));
      return;
    }
    const sessionsPath = '/redfish/v1/SessionService/Sessions';

    if (method === 'POST' && path === sessionsPath) {
      if (this.opts.sessions === 'broken') {
        error(redfishError(405, 'Base.1.0.OperationNotAllowed', 'Session creation is disabled on this service'));
        return;
      }
      const b = isObject(body) ? body : {};
      if (b.UserName !== this.username || b.Password !== this.password) {
        error(redfishError(401, 'Base.1.0.NoValidSession', 'The authentication credentials included with this request are missing or invalid'));
        return;
      }
      const id = String(this.nextId++);
      const token = randomBytes(16).toString('hex');
      this.sessions.set(token, id);
      const location = `${sessionsPath}/${id}`;
      answer(
        201,
        { '@odata.id': location, '@odata.type': '#Session.v1_5_0.Session', Id: id, Name: `Session ${id}`, UserName: this.username },
        { 'x-auth-token': token, location },
      );
      return;
    }

    if (!open && (auth === 'none' || auth === 'bad')) {
      error(redfishError(401, 'Base.1.0.NoValidSession', 'There is no valid session established with the implementation'), {
        'www-authenticate': 'Basic realm="mockup"',
      });
      return;
    }

    if (path === '/redfish' && method === 'GET') {
      answer(200, { v1: '/redfish/v1/' });
      return;
    }

    if (path.startsWith(`${sessionsPath}/`)) {
      const id = path.slice(sessionsPath.length + 1);
      const token = [...this.sessions.entries()].find(([, sid]) => sid === id)?.[0];
      if (!token) {
        error(redfishError(404, 'Base.1.0.ResourceMissingAtURI', `No session ${id}`));
        return;
      }
      if (method === 'DELETE') {
        this.sessions.delete(token);
        answer(204);
      } else {
        answer(200, { '@odata.id': path, Id: id, UserName: this.username });
      }
      return;
    }
    if (path === sessionsPath && method === 'GET') {
      const members = [...this.sessions.values()].map((id) => ({ '@odata.id': `${sessionsPath}/${id}` }));
      answer(200, { '@odata.id': sessionsPath, Members: members, 'Members@odata.count': members.length });
      return;
    }

    const monitorPrefix = '/redfish/v1/TaskService/TaskMonitors/';
    if (path.startsWith(monitorPrefix) || path.startsWith('/redfish/v1/TaskService/Tasks/')) {
      const id = path.split('/').pop()!;
      const task = this.tasks.get(id);
      if (!task) {
        if (path.startsWith(monitorPrefix)) {
          error(redfishError(404, 'Base.1.0.ResourceMissingAtURI', `No task monitor ${id}`));
          return;
        }
      } else {
        const monitor = path.startsWith(monitorPrefix);
        if (monitor && task.state === 'Running') {
          if (task.pollsLeft > 0) {
            task.pollsLeft--;
          } else if (task.fail) {
            task.state = 'Exception';
          } else if (!task.ready || task.ready()) {
            task.fail = task.apply() || undefined;
            task.state = task.fail ? 'Exception' : 'Completed';
          }
        }
        const t: Json = {
          '@odata.id': `/redfish/v1/TaskService/Tasks/${id}`,
          '@odata.type': '#Task.v1_7_0.Task',
          Id: id,
          TaskState: task.state,
          TaskStatus: task.state === 'Exception' ? 'Critical' : 'OK',
          TaskMonitor: `${monitorPrefix}${id}`,
          Messages: task.state === 'Exception' ? [{ MessageId: 'Base.1.0.InternalError', Message: task.fail }] : [],
        };
        answer(monitor && task.state === 'Running' ? 202 : 200, t, monitor ? { location: `${monitorPrefix}${id}` } : {});
        return;
      }
    }

    const resetSuffix = '/Actions/ComputerSystem.Reset';
    if (method === 'POST' && path.endsWith(resetSuffix)) {
      const systemPath = path.slice(0, -resetSuffix.length);
      const system = this.resource(systemPath);
      if (!system) {
        error(redfishError(404, 'Base.1.0.ResourceMissingAtURI', `No system at ${systemPath}`));
        return;
      }
      const action = ((system.Actions as Json | undefined)?.['#ComputerSystem.Reset'] ?? {}) as Json;
      const allowed = (action['ResetType@Redfish.AllowableValues'] as string[] | undefined) ?? [];
      const type = isObject(body) ? body.ResetType : undefined;
      if (typeof type !== 'string' || !allowed.includes(type)) {
        error(redfishError(400, 'Base.1.0.ActionParameterNotSupported', `The value ${String(type)} for the parameter ResetType in the action ComputerSystem.Reset is not supported`));
        return;
      }
      const apply = () => {
        const before = (this.resource(systemPath) ?? system).PowerState;
        const power = ['ForceOff', 'GracefulShutdown'].includes(type) ? 'Off' : type === 'Nmi' ? (system.PowerState as string) : 'On';
        this.setResource(systemPath, { ...(this.resource(systemPath) ?? system), PowerState: power, LastResetTime: new Date().toISOString() });
        const boots = /Restart|PowerCycle/.test(type) || (power === 'On' && before === 'Off');
        if (boots) for (const hook of this.onBoot) hook(systemPath);
      };
      if (!this.asyncActions) {
        apply();
        answer(204);
        return;
      }
      const id = this.addTask(apply);
      answer(202, { '@odata.id': `/redfish/v1/TaskService/Tasks/${id}`, Id: id, TaskState: 'New' }, { location: `${monitorPrefix}${id}` });
      return;
    }

    for (const route of this.routes) if (route(this, { method, path, body }, answer)) return;

    const current = this.resource(path);
    if (!current) {
      error(redfishError(404, 'Base.1.0.ResourceMissingAtURI', `The resource at the URI ${path} was not found`));
      return;
    }

    if (method === 'GET') {
      answer(200, current, { etag: this.etag(path)! });
      return;
    }

    if (method === 'PATCH') {
      // Writable here: computer systems and virtual media slots.
      if (!/^\/redfish\/v1\/Systems\/[^/]+(\/VirtualMedia\/[^/]+)?$/.test(path)) {
        error(redfishError(405, 'Base.1.0.OperationNotAllowed', `PATCH is not allowed on ${path}`), { allow: 'GET, HEAD' });
        return;
      }
      if (!isObject(body)) {
        error(redfishError(400, 'Base.1.0.MalformedJSON', 'The request body was malformed JSON'));
        return;
      }
      if (this.concurrentChanges > 0) {
        this.concurrentChanges--;
        const oem = isObject(current.Oem) ? current.Oem : {};
        this.setResource(path, { ...current, Oem: { ...oem, ChangedBy: `another client ${this.nextId++}` } });
      }
      if (!ifMatch) {
        error(redfishError(428, 'Base.1.0.PreconditionRequired', 'A precondition header or annotation is required to change this resource'));
        return;
      }
      if (ifMatch !== this.etag(path)) {
        error(redfishError(412, 'Base.1.0.PreconditionFailed', 'The ETag supplied did not match the ETag required to change this resource'));
        return;
      }
      const boot = isObject(body.Boot) ? body.Boot : undefined;
      const targets = isObject(current.Boot) ? (current.Boot['BootSourceOverrideTarget@Redfish.AllowableValues'] as string[] | undefined) : undefined;
      if (boot && typeof boot.BootSourceOverrideTarget === 'string' && targets && !targets.includes(boot.BootSourceOverrideTarget)) {
        error(redfishError(400, 'Base.1.0.PropertyValueNotInList', `The value ${boot.BootSourceOverrideTarget} for the property BootSourceOverrideTarget is not in the list of acceptable values`));
        return;
      }
      const updated = merge(this.resource(path)!, body);
      this.setResource(path, updated);
      answer(200, updated, { etag: this.etag(path)! });
      return;
    }

    error(redfishError(405, 'Base.1.0.OperationNotAllowed', `${method} is not allowed on ${path}`), { allow: 'GET, HEAD' });
  }
}
