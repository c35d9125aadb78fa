/**
 * A small client for OpenStack Ironic's REST API over undici: microversion
 * negotiation, Ironic's doubly-encoded error bodies, and errors typed so
 * activities can tell "busy, try again" from "refused" from "gone".
 */
import type { IronicBiosSetting } from '../../types/firmware-settings';
import { Agent, request, type Dispatcher } from 'undici';
import type { TlsMaterial } from '../tls/files';
import { probeTls } from '../tls/probe';
import { tlsFailure } from '../tls/tls-error';
import { FIRMWARE_MICROVERSION, type IronicNode, type IronicPort } from './types';
import type { IronicFirmwareComponent } from '../../types/firmware-components';

/** Everything metalflow sends needs 1.81 (node inventory); newer servers are asked for the same. */
export const REQUIRED_MICROVERSION = '1.81';
/** Ironic accepts `abort` in `wait call-back` (a deploy waiting for its agent) from this version (Ironic 2025.2). */
export const DEPLOY_ABORT_MICROVERSION = '1.110';
/** The node's own `disable_power_off` (Ironic 2025.1): Ironic then never powers the node off, only reboots it. */
export const DISABLE_POWER_OFF_MICROVERSION = '1.95';
/** The node's `health` field. */
export const NODE_HEALTH_MICROVERSION = '1.109';
/** Ironic's `service` verb (servicing an active node with service steps) from this version (Ironic 2023.2 / 23.0). */
export const SERVICE_MICROVERSION = '1.87';

export type IronicPowerTarget = 'power on' | 'power off' | 'soft power off' | 'rebooting' | 'soft rebooting';

/** `tls`: the handshake failed (untrusted certificate, a client certificate wanted, not TLS at all); retried like `unavailable`. */
export type IronicErrorKind = 'not-found' | 'conflict' | 'rejected' | 'too-old' | 'unavailable' | 'tls';

export class IronicError extends Error {
  constructor(
    readonly kind: IronicErrorKind,
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'IronicError';
  }
}

export interface IronicClientOptions {
  url: string;
  /** For `auth_strategy = http_basic`; omit for noauth. */
  basicAuth?: { username: string; password: string };
  requestTimeoutMs?: number;
  /** An https Ironic: the CA bundle it is verified against (else the system's), and a client certificate for mTLS. */
  tls?: TlsMaterial;
  /** Overrides the client's own undici Agent (then `tls` is ignored). */
  dispatcher?: Dispatcher;
  /** Nodes per page when listing; Ironic's `[api] max_limit` (1000) by default. */
  listPageSize?: number;
}

const versionNumber = (v: string): [number, number] => {
  const [major = '0', minor = '0'] = v.split('.');
  return [Number(major), Number(minor)];
};

export function compareMicroversions(a: string, b: string): number {
  const [am, an] = versionNumber(a);
  const [bm, bn] = versionNumber(b);
  return am !== bm ? am - bm : an - bn;
}

/** Ironic wraps its message as JSON inside a JSON string; unwrap it to the faultstring. */
export function ironicErrorMessage(body: string): string {
  try {
    const outer = JSON.parse(body) as { error_message?: unknown };
    const inner = outer.error_message;
    if (typeof inner === 'string') {
      try {
        const parsed = JSON.parse(inner) as { faultstring?: string };
        return parsed.faultstring ?? inner;
      } catch {
        return inner;
      }
    }
    if (inner && typeof inner === 'object' && 'faultstring' in inner) {
      return String((inner as { faultstring: unknown }).faultstring);
    }
  } catch {
    // not JSON: fall through to the raw text
  }
  return body.slice(0, 500);
}

/** The connection closed under a request before any answer (a keep-alive connection the server had just dropped). */
const droppedConnection = (err: unknown): boolean => {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'UND_ERR_SOCKET' || code === 'ECONNRESET';
};

export class IronicClient {
  private readonly base: string;
  private readonly headers: Record<string, string>;
  private readonly dispatcher: Dispatcher;
  private readonly timeout: number;
  private negotiated?: Promise<string>;
  /** The newest API version the server speaks, read with the negotiation. */
  private serverMax?: string;
  private readonly pageSize: number;
  private readonly tls?: TlsMaterial;

  constructor(opts: IronicClientOptions) {
    this.base = opts.url.replace(/\/+$/, '');
    this.timeout = opts.requestTimeoutMs ?? 30_000;
    this.pageSize = opts.listPageSize ?? 1000;
    this.tls = opts.tls;
    this.dispatcher = opts.dispatcher ?? new Agent({ connections: 32, keepAliveTimeout: 10_000, ...(opts.tls ? { connect: { ...opts.tls } } : {}) });
    this.headers = { accept: 'application/json' };
    if (opts.basicAuth) {
      const token = Buffer.from(`${opts.basicAuth.username}:${opts.basicAuth.password}`).toString('base64');
      this.headers.authorization = `Basic ${token}`;
    }
  }

  /** Where this client sends its requests (without any user information the URL held). */
  get where(): string {
    const url = new URL(this.base);
    url.username = '';
    url.password = '';
    return url.toString().replace(/\/$/, '');
  }

  /** Reads the server's supported range once and fails clearly if it is too old. */
  microversion(): Promise<string> {
    this.negotiated ??= this.negotiate().catch((err: unknown) => {
      this.negotiated = undefined;
      throw err;
    });
    return this.negotiated;
  }

  /** The newest API version Ironic serves, asked now (the negotiated one is kept). */
  async serverVersion(): Promise<string> {
    const root = await this.send<{ version?: { version?: string; min_version?: string } }>('GET', '/v1/', undefined, false);
    const max = root.version?.version;
    if (!max) throw new IronicError('unavailable', `Ironic at ${this.base} did not report its API version on GET /v1/`);
    return max;
  }

  private async negotiate(): Promise<string> {
    const max = await this.serverVersion();
    if (compareMicroversions(max, REQUIRED_MICROVERSION) < 0) {
      throw new IronicError(
        'too-old',
        `Ironic at ${this.base} supports API up to ${max}; metalflow needs ${REQUIRED_MICROVERSION} or newer (Ironic 2023.1 / 21.4 or later)`,
      );
    }
    this.serverMax = max;
    return REQUIRED_MICROVERSION;
  }

  /**
   * Ironic's `abort` verb, which stops a wait state (clean, inspect, deploy,
   * service, rescue). Sent at the version that also allows a deploy wait to be
   * aborted when the server has it; an older one refuses that state (rejected).
   */
  async abortProvisioning(nodeId: string): Promise<void> {
    await this.microversion();
    const deployAbort = this.serverMax !== undefined && compareMicroversions(this.serverMax, DEPLOY_ABORT_MICROVERSION) >= 0;
    await this.send('PUT', `/v1/nodes/${nodeId}/states/provision`, { target: 'abort' }, deployAbort ? DEPLOY_ABORT_MICROVERSION : true);
  }

  /** Whether the server speaks `version` (read with the negotiation). */
  async supports(version: string): Promise<boolean> {
    await this.microversion();
    return this.serverMax !== undefined && compareMicroversions(this.serverMax, version) >= 0;
  }

  /** Sets the node's `disable_power_off`; the caller checks supports(DISABLE_POWER_OFF_MICROVERSION) first. */
  async setDisablePowerOff(nodeId: string, value: boolean): Promise<void> {
    await this.send('PATCH', `/v1/nodes/${nodeId}`, [{ op: 'add', path: '/disable_power_off', value }], DISABLE_POWER_OFF_MICROVERSION);
  }

  /** The node's `disable_power_off`, or undefined when the server does not have the field. */
  async getDisablePowerOff(nodeId: string): Promise<boolean | undefined> {
    if (!(await this.supports(DISABLE_POWER_OFF_MICROVERSION))) return undefined;
    const node = await this.send<{ disable_power_off?: boolean }>('GET', `/v1/nodes/${nodeId}?fields=disable_power_off`, undefined, DISABLE_POWER_OFF_MICROVERSION);
    return node.disable_power_off;
  }

  /** `version`: false for the unversioned root, true for the negotiated microversion, or a newer one a call needs. */
  private async send<T>(method: Dispatcher.HttpMethod, path: string, body?: unknown, version: boolean | string = true): Promise<T> {
    const headers: Record<string, string> = { ...this.headers };
    if (typeof version === 'string') headers['x-openstack-ironic-api-version'] = version;
    else if (version) headers['x-openstack-ironic-api-version'] = await this.microversion();
    if (body !== undefined) headers['content-type'] = 'application/json';
    const send = () =>
      request(`${this.base}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        dispatcher: this.dispatcher,
        headersTimeout: this.timeout,
        bodyTimeout: this.timeout,
      });
    let res: Dispatcher.ResponseData;
    try {
      res = await send().catch((err: unknown) => {
        // Ironic may close an idle keep-alive connection just as a request goes out on it
        // ("other side closed", seen in a test run): a read is sent once more, on a new one.
        if (method === 'GET' && droppedConnection(err)) return send();
        throw err;
      });
    } catch (err) {
      throw await this.unreachable(err);
    }
    const text = await res.body.text();
    if (res.statusCode < 300) return (text ? JSON.parse(text) : undefined) as T;
    const message = `Ironic ${method} ${path.split('?')[0]}: HTTP ${res.statusCode}: ${ironicErrorMessage(text)}`;
    switch (res.statusCode) {
      case 404:
        throw new IronicError('not-found', message, 404);
      case 409:
        throw new IronicError('conflict', message, 409);
      case 406:
        throw new IronicError('too-old', message, 406);
      case 400:
      case 422:
        throw new IronicError('rejected', message, res.statusCode);
      case 401:
      case 403:
        throw new IronicError('rejected', `${message} (check the Ironic credentials metalflow uses)`, res.statusCode);
      default:
        throw new IronicError('unavailable', message, res.statusCode);
    }
  }

  /**
   * A request that never got an HTTP answer. A TLS reason undici names is
   * said at once; a connection closed right after the handshake (what a TLS
   * 1.3 server that refuses the client certificate does) is probed once to
   * find out why.
   */
  private async unreachable(err: unknown): Promise<IronicError> {
    let failure = tlsFailure(err);
    const url = new URL(this.base);
    const code = (err as { code?: unknown }).code;
    if (!failure && url.protocol === 'https:' && (code === 'UND_ERR_SOCKET' || code === 'ECONNRESET')) {
      const host = url.hostname.replace(/^\[|\]$/g, '');
      const hello = Buffer.from(`GET / HTTP/1.1\r\nHost: ${url.host}\r\nConnection: close\r\n\r\n`);
      const probe = await probeTls({ host, port: Number(url.port || 443), hello }, this.tls ?? {}).catch(() => undefined);
      if (probe?.kind === 'tls') failure = probe.failure;
      if (probe?.kind === 'closed') {
        return new IronicError('tls', `TLS with Ironic at ${this.base}: the server closed the connection after the handshake; it most likely wants a client certificate it trusts (IRONIC_CLIENT_CERT_FILE and IRONIC_CLIENT_PRIVATE_KEY_FILE)`);
      }
    }
    if (!failure) return new IronicError('unavailable', `cannot reach Ironic at ${this.base}: ${err instanceof Error ? err.message : String(err)}`);
    const hint = failure.notTls
      ? 'the port does not speak TLS: use an http:// IRONIC_URL, or Ironic\'s TLS port'
      : failure.clientCertificateRefused
        ? 'Ironic (or its proxy) wants a client certificate it trusts: IRONIC_CLIENT_CERT_FILE and IRONIC_CLIENT_PRIVATE_KEY_FILE'
        : failure.untrusted
          ? 'its certificate is not signed by a trusted CA: IRONIC_CACERT_FILE names the CA bundle that signed it'
          : 'see the reason';
    return new IronicError('tls', `TLS with Ironic at ${this.base} failed: ${failure.reason} (${failure.code}); ${hint}`);
  }

  async getNode(ident: string): Promise<IronicNode | undefined> {
    try {
      return await this.send<IronicNode>('GET', `/v1/nodes/${encodeURIComponent(ident)}`);
    } catch (err) {
      if (err instanceof IronicError && err.kind === 'not-found') return undefined;
      throw err;
    }
  }

  /** A few fields of one node; undefined when it does not exist. */
  async getNodeState<K extends keyof IronicNode>(ident: string, fields: K[]): Promise<Pick<IronicNode, K> | undefined> {
    try {
      return await this.send<Pick<IronicNode, K>>('GET', `/v1/nodes/${encodeURIComponent(ident)}?fields=${fields.join(',')}`);
    } catch (err) {
      if (err instanceof IronicError && err.kind === 'not-found') return undefined;
      throw err;
    }
  }

  /** A few fields of every node, following Ironic's pagination (`version`: one a field needs). */
  async listNodeStates<K extends keyof IronicNode>(fields: K[], version?: string): Promise<Pick<IronicNode, K | 'uuid'>[]> {
    const wanted = fields.includes('uuid' as K) ? fields : [...fields, 'uuid'];
    const out: Pick<IronicNode, K | 'uuid'>[] = [];
    let marker: string | undefined;
    for (;;) {
      const page = await this.send<{ nodes: Pick<IronicNode, K | 'uuid'>[] }>(
        'GET',
        `/v1/nodes?fields=${wanted.join(',')}&limit=${this.pageSize}${marker ? `&marker=${marker}` : ''}`,
        undefined,
        version ?? true,
      );
      out.push(...page.nodes);
      if (page.nodes.length < this.pageSize) return out;
      marker = page.nodes[page.nodes.length - 1]!.uuid;
    }
  }

  async findNodeByMac(mac: string): Promise<IronicNode | undefined> {
    const { ports } = await this.send<{ ports: IronicPort[] }>(
      'GET',
      `/v1/ports?address=${encodeURIComponent(mac)}&fields=uuid,address,node_uuid`,
    );
    const nodeId = ports[0]?.node_uuid;
    return nodeId ? this.getNode(nodeId) : undefined;
  }

  /** `version`: a newer microversion than the negotiated one, for a field that needs it (e.g. disable_power_off). */
  createNode(body: Record<string, unknown>, version?: string): Promise<IronicNode> {
    return this.send<IronicNode>('POST', '/v1/nodes', body, version ?? true);
  }

  patchNode(nodeId: string, ops: JsonPatchOp[], version?: string): Promise<IronicNode> {
    return this.send<IronicNode>('PATCH', `/v1/nodes/${nodeId}`, ops, version ?? true);
  }

  /** Maintenance with a reason: Ironic's own endpoint (`maintenance_reason` cannot be patched). */
  async setMaintenance(nodeId: string, reason: string): Promise<void> {
    await this.send('PUT', `/v1/nodes/${nodeId}/maintenance`, { reason });
  }

  /** Out of maintenance (`DELETE …/maintenance`, which also clears the reason and fault). */
  async clearMaintenance(nodeId: string): Promise<void> {
    await this.send('DELETE', `/v1/nodes/${nodeId}/maintenance`);
  }

  async deleteNode(nodeId: string): Promise<void> {
    await this.send('DELETE', `/v1/nodes/${nodeId}`);
  }

  async listPorts(nodeId: string): Promise<IronicPort[]> {
    const { ports } = await this.send<{ ports: IronicPort[] }>(
      'GET',
      `/v1/ports?node_uuid=${nodeId}&fields=uuid,address,node_uuid,pxe_enabled`,
    );
    return ports;
  }

  createPort(nodeId: string, address: string): Promise<IronicPort> {
    return this.send<IronicPort>('POST', '/v1/ports', { node_uuid: nodeId, address, pxe_enabled: true });
  }

  /** `service` is sent at the version that has it; an older Ironic is refused by name (too-old) before anything is sent. */
  async setProvisionState(nodeId: string, target: string, extra: Record<string, unknown> = {}): Promise<void> {
    const version = target === 'service' ? await this.requireVersion(SERVICE_MICROVERSION, 'servicing a provisioned host (the service verb, Ironic 2023.2 / 23.0 or later)') : true;
    await this.send('PUT', `/v1/nodes/${nodeId}/states/provision`, { target, ...extra }, version);
  }

  /** `version` when the server speaks it; otherwise a too-old error naming what needs it and both versions. */
  async requireVersion(version: string, what: string): Promise<string> {
    if (await this.supports(version)) return version;
    throw new IronicError('too-old', `${what} needs Ironic API ${version} or newer; Ironic at ${this.where} supports up to ${this.serverMax ?? 'an unknown version'}`);
  }

  /** The node's desired RAID layout (`PUT …/states/raid`), which Ironic's raid.create_configuration clean step builds. */
  async setTargetRaidConfig(nodeId: string, config: { logical_disks: unknown[] }): Promise<void> {
    await this.send('PUT', `/v1/nodes/${nodeId}/states/raid`, config);
  }

  /**
   * The node's history (API 1.78): Ironic's own record of errors. Its power-state sync clears
   * `last_error` within a sync interval (node_history on), so a late reader finds the reason here.
   */
  async getNodeHistory(nodeId: string): Promise<{ created_at: string; severity: string; event: string }[]> {
    const { history } = await this.send<{ history: { created_at: string; severity: string; event: string }[] }>('GET', `/v1/nodes/${nodeId}/history`);
    return history.map(({ created_at, severity, event }) => ({ created_at, severity, event }));
  }

  /** Each interface's check of the node's settings (`GET …/validate`): `{ deploy: { result, reason }, boot: … }`. */
  validateNode(nodeId: string): Promise<Record<string, { result: boolean | null; reason?: string | null }>> {
    return this.send('GET', `/v1/nodes/${nodeId}/validate`);
  }

  /**
   * The BIOS settings Ironic has cached for the node (what its bios interface last read or applied), with
   * its BIOS registry fields (`?detail=true`, API 1.74): types, limits, read-only, allowable values.
   */
  async getBiosRegistry(nodeId: string): Promise<IronicBiosSetting[]> {
    return (await this.send<{ bios: IronicBiosSetting[] }>('GET', `/v1/nodes/${nodeId}/bios?detail=true`)).bios;
  }

  /**
   * The firmware components Ironic has cached for the node (`GET …/firmware`, API 1.86): each with its
   * initial and current version and when it last changed. An empty list where the firmware interface
   * caches none (no-firmware, fake).
   */
  async getFirmwareComponents(nodeId: string): Promise<IronicFirmwareComponent[]> {
    return (await this.send<{ firmware: IronicFirmwareComponent[] }>('GET', `/v1/nodes/${nodeId}/firmware`, undefined, FIRMWARE_MICROVERSION)).firmware;
  }

  /** `timeout` (seconds) bounds a soft power off / soft reboot; Ironic records a last_error when it passes. */
  async setPowerState(nodeId: string, target: IronicPowerTarget, timeout?: number): Promise<void> {
    await this.send('PUT', `/v1/nodes/${nodeId}/states/power`, timeout === undefined ? { target } : { target, timeout });
  }

  /** Hardware types and the conductors serving each (Ironic lists only those of live conductors). */
  async listDrivers(): Promise<{ name: string; hosts: string[] }[]> {
    const res = await this.send<{ drivers?: { name: string; hosts?: string[] }[] }>('GET', '/v1/drivers');
    return (res.drivers ?? []).map((d) => ({ name: d.name, hosts: d.hosts ?? [] }));
  }

  /** Interfaces this Ironic has enabled for a hardware type, e.g. `enabled_boot_interfaces`. */
  getDriver(name: string): Promise<Record<string, unknown>> {
    return this.send<Record<string, unknown>>('GET', `/v1/drivers/${encodeURIComponent(name)}`);
  }

  async getInventory(nodeId: string): Promise<Record<string, unknown> | undefined> {
    try {
      const res = await this.send<{ inventory?: Record<string, unknown> }>('GET', `/v1/nodes/${nodeId}/inventory`);
      return res.inventory;
    } catch (err) {
      if (err instanceof IronicError && err.kind === 'not-found') return undefined;
      throw err;
    }
  }
}

export interface JsonPatchOp {
  op: 'add' | 'replace' | 'remove';
  path: string;
  value?: unknown;
}
