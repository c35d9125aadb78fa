/**
 * Connecting to a Redfish service: the service root, authentication (a
 * session via SessionService, deleted on `close()`, with a fall back to HTTP
 * basic when the service has none; or basic only, or sessions only) and the
 * system the BMC address names (or the only one when it names the service
 * root).
 */
import type { Agent } from 'undici';
import { RedfishError } from '../bmc/errors';
import { arr, header, httpError, obj, odataId, str, type Json } from './http';
import { normalizePath, RedfishTransport } from './transport';

const SERVICE_ROOT_PATHS = new Set(['', '/', '/redfish', '/redfish/v1']);

export abstract class RedfishSession extends RedfishTransport {
  private root: Json = {};
  private system?: string;

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

  protected async init(): Promise<void> {
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

  protected async createSession(): Promise<void> {
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

  protected async collectionMembers(path: string): Promise<string[]> {
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
}
