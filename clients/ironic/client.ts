/**
 * A small client for OpenStack Ironic's REST API: nodes, ports, verbs and
 * what Ironic caches about a node. The HTTP side (negotiation, typed errors,
 * TLS) is transport.ts; errors.ts and microversions.ts are re-exported here.
 */
import type { IronicBiosSetting } from '../../model/firmware-settings';
import type { IronicFirmwareComponent } from '../../model/firmware-components';
import { IronicError } from './errors';
import { compareMicroversions, DEPLOY_ABORT_MICROVERSION, DISABLE_POWER_OFF_MICROVERSION, SERVICE_MICROVERSION } from './microversions';
import { IronicTransport } from './transport';
import { FIRMWARE_MICROVERSION, type IronicNode, type IronicPort } from './types';

export * from './errors';
export * from './microversions';
export type { IronicClientOptions } from './transport';

/**
 * A node's path. Ids come from Ironic, but also from a host's stored status (a restored
 * status is the caller's): one with `/`, `?` or `..` must not reach another resource.
 */
export const nodePath = (id: string): string => `/v1/nodes/${encodeURIComponent(id)}`;

export type IronicPowerTarget = 'power on' | 'power off' | 'soft power off' | 'rebooting' | 'soft rebooting';

export class IronicClient extends IronicTransport {
  /**
   * Ironic's `abort` verb, which stops a wait state (clean, inspect, deploy,
   * service, rescue). Sent at the version that also allows a deploy wait to be
   * aborted when the server has it; an older one refuses that state (rejected).
   */
  async abortProvisioning(nodeId: string): Promise<void> {
    await this.microversion();
    const deployAbort = this.serverMax !== undefined && compareMicroversions(this.serverMax, DEPLOY_ABORT_MICROVERSION) >= 0;
    await this.send('PUT', `${nodePath(nodeId)}/states/provision`, { target: 'abort' }, deployAbort ? DEPLOY_ABORT_MICROVERSION : true);
  }

  /** Sets the node's `disable_power_off`; the caller checks supports(DISABLE_POWER_OFF_MICROVERSION) first. */
  async setDisablePowerOff(nodeId: string, value: boolean): Promise<void> {
    await this.send('PATCH', `${nodePath(nodeId)}`, [{ op: 'add', path: '/disable_power_off', value }], DISABLE_POWER_OFF_MICROVERSION);
  }

  /** The node's `disable_power_off`, or undefined when the server does not have the field. */
  async getDisablePowerOff(nodeId: string): Promise<boolean | undefined> {
    if (!(await this.supports(DISABLE_POWER_OFF_MICROVERSION))) return undefined;
    const node = await this.send<{ disable_power_off?: boolean }>('GET', `${nodePath(nodeId)}?fields=disable_power_off`, undefined, DISABLE_POWER_OFF_MICROVERSION);
    return node.disable_power_off;
  }

  /** `version`: a newer microversion than the negotiated one, for a field only it shows (e.g. disable_power_off). */
  async getNode(ident: string, version?: string): Promise<IronicNode | undefined> {
    try {
      return await this.send<IronicNode>('GET', `${nodePath(ident)}`, undefined, version ?? true);
    } catch (err) {
      if (err instanceof IronicError && err.kind === 'not-found') return undefined;
      throw err;
    }
  }

  /** A few fields of one node; undefined when it does not exist. */
  async getNodeState<K extends keyof IronicNode>(ident: string, fields: K[]): Promise<Pick<IronicNode, K> | undefined> {
    try {
      return await this.send<Pick<IronicNode, K>>('GET', `${nodePath(ident)}?fields=${fields.join(',')}`);
    } catch (err) {
      if (err instanceof IronicError && err.kind === 'not-found') return undefined;
      throw err;
    }
  }

  /**
   * A few fields of every node, following Ironic's pagination (`version`: one a field needs), or of the nodes
   * Ironic's list filters select (`filter`, e.g. `{ provision_state: 'deploying' }`).
   */
  async listNodeStates<K extends keyof IronicNode>(fields: K[], version?: string, filter: Record<string, string> = {}): Promise<Pick<IronicNode, K | 'uuid'>[]> {
    const wanted = fields.includes('uuid' as K) ? fields : [...fields, 'uuid'];
    const out: Pick<IronicNode, K | 'uuid'>[] = [];
    const filters = Object.entries(filter).map(([k, v]) => `&${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('');
    let marker: string | undefined;
    for (;;) {
      const page = await this.send<{ nodes: Pick<IronicNode, K | 'uuid'>[] }>(
        'GET',
        `/v1/nodes?fields=${wanted.join(',')}${filters}&limit=${this.pageSize}${marker ? `&marker=${encodeURIComponent(marker)}` : ''}`,
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
    return this.send<IronicNode>('PATCH', `${nodePath(nodeId)}`, ops, version ?? true);
  }

  /** Maintenance with a reason: Ironic's own endpoint (`maintenance_reason` cannot be patched). */
  async setMaintenance(nodeId: string, reason: string): Promise<void> {
    await this.send('PUT', `${nodePath(nodeId)}/maintenance`, { reason });
  }

  /** Out of maintenance (`DELETE …/maintenance`, which also clears the reason and fault). */
  async clearMaintenance(nodeId: string): Promise<void> {
    await this.send('DELETE', `${nodePath(nodeId)}/maintenance`);
  }

  async deleteNode(nodeId: string): Promise<void> {
    await this.send('DELETE', `${nodePath(nodeId)}`);
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
    await this.send('PUT', `${nodePath(nodeId)}/states/provision`, { target, ...extra }, version);
  }

  /** The node's desired RAID layout (`PUT …/states/raid`), which Ironic's raid.create_configuration clean step builds. */
  async setTargetRaidConfig(nodeId: string, config: { logical_disks: unknown[] }): Promise<void> {
    await this.send('PUT', `${nodePath(nodeId)}/states/raid`, config);
  }

  /**
   * The node's history (API 1.78): Ironic's own record of errors. Its power-state sync clears
   * `last_error` within a sync interval (node_history on), so a late reader finds the reason here.
   * With `[conductor] node_history` off Ironic answers an empty list, and keeps `last_error`.
   */
  async getNodeHistory(nodeId: string): Promise<{ created_at: string; severity: string; event: string }[]> {
    const { history } = await this.send<{ history: { created_at: string; severity: string; event: string }[] }>('GET', `${nodePath(nodeId)}/history`);
    return history.map(({ created_at, severity, event }) => ({ created_at, severity, event }));
  }

  /** Each interface's check of the node's settings (`GET …/validate`): `{ deploy: { result, reason }, boot: … }`. */
  validateNode(nodeId: string): Promise<Record<string, { result: boolean | null; reason?: string | null }>> {
    return this.send('GET', `${nodePath(nodeId)}/validate`);
  }

  /**
   * The BIOS settings Ironic has cached for the node (what its bios interface last read or applied), with
   * its BIOS registry fields (`?detail=true`, API 1.74): types, limits, read-only, allowable values.
   */
  async getBiosRegistry(nodeId: string): Promise<IronicBiosSetting[]> {
    return (await this.send<{ bios: IronicBiosSetting[] }>('GET', `${nodePath(nodeId)}/bios?detail=true`)).bios;
  }

  /**
   * The firmware components Ironic has cached for the node (`GET …/firmware`, API 1.86): each with its
   * initial and current version and when it last changed. An empty list where the firmware interface
   * caches none (no-firmware, fake).
   */
  async getFirmwareComponents(nodeId: string): Promise<IronicFirmwareComponent[]> {
    return (await this.send<{ firmware: IronicFirmwareComponent[] }>('GET', `${nodePath(nodeId)}/firmware`, undefined, FIRMWARE_MICROVERSION)).firmware;
  }

  /** `timeout` (seconds) bounds a soft power off / soft reboot; Ironic records a last_error when it passes. */
  async setPowerState(nodeId: string, target: IronicPowerTarget, timeout?: number): Promise<void> {
    await this.send('PUT', `${nodePath(nodeId)}/states/power`, timeout === undefined ? { target } : { target, timeout });
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
      const res = await this.send<{ inventory?: Record<string, unknown> }>('GET', `${nodePath(nodeId)}/inventory`);
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
