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
 * The services themselves (sessions, tasks, Reset, resources) are routes in
 * redfish-mockup-routes.ts; this module is the server, its state and auth.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import { isAbsolute, join, resolve } from 'node:path';
import { execFileSync } from 'node:child_process';
import { REPO_ROOT } from '../../../config/env';
import { createSession, redfishError, reset, resources, sessions, tasks, type Json } from './redfish-mockup-routes';


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

/** A service of the server (redfish-mockup-routes.ts) or a test's extra one (redfish-mockup-firmware.ts): true when the request was answered. */
export type MockupRoute = (
  m: RedfishMockup,
  req: { method: string; path: string; body: unknown; ifMatch?: string },
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
  private readonly taskList = new Map<string, Task>();
  private readonly sockets = new Set<Socket>();
  private server?: Server;
  private nextId = 1;
  private readonly opts: MockupOptions;
  /** `sessions: 'broken'`: sessions advertised, but creating one answers 405. */
  readonly sessionsBroken: boolean;
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
    this.sessionsBroken = opts.sessions === 'broken';
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
    const id = this.newId();
    const task: Task = { id, pollsLeft: this.taskPolls, apply, ready, state: 'Running' };
    if (this.failNextTask) {
      task.fail = this.failNextTask;
      this.failNextTask = undefined;
    }
    this.taskList.set(id, task);
    return id;
  }

  /** A task by id, as its monitor reports it. */
  task(id: string): Task | undefined {
    return this.taskList.get(id);
  }

  /** The next id: sessions, tasks and concurrent changes draw from one sequence, so no two share a number. */
  newId(): string {
    return String(this.nextId++);
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
    const request = { method, path, body, ifMatch };
    if (createSession(this, request, answer)) return;

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

    // The test's own routes come after the built-in actions and before the tree's resources.
    for (const route of [sessions, tasks, reset, ...this.routes, resources]) if (route(this, request, answer)) return;
  }
}
