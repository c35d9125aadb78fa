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
 *
 * The layers: `transport.ts` (HTTP, ETags, task monitors), `session.ts`
 * (service root, authentication, the system), this file (the operations on
 * the system: power, reset, boot override, virtual media, inventory).
 */
import type { HardwareDetails } from '../../model/host';
import { RedfishError } from '../bmc/errors';
import { arr, obj, odataId, str, type Json } from './http';
import { hardwareFromRedfish } from './inventory';
import { RedfishSession } from './session';
import { pollPowerState } from '../bmc/power-poll';
import type { BootOverride, PowerWaitOptions, RedfishClientOptions, RedfishPowerState, ResetType, VirtualMediaState } from './types';

export type { Json, RedfishResponse } from './http';
export * from './types';

/** Which virtual media slot: the CD/DVD (the ISO), or the USB stick/floppy (a config drive beside it). */
export type MediaSlot = 'cd' | 'usb';

const SLOT_TYPES: Record<MediaSlot, string[]> = { cd: ['CD', 'DVD'], usb: ['USBStick', 'Floppy'] };

export class RedfishClient extends RedfishSession {
  private constructor(opts: RedfishClientOptions) {
    super(opts);
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
    await pollPowerState<string | undefined>(
      () => this.getPowerState(),
      target,
      opts,
      (state, seconds) => this.fail('timeout', `system ${this.systemPath} on ${this.origin} is still ${state ?? 'in an unknown power state'} ${seconds} s after asking for ${target}`),
      this.signal,
    );
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

  /**
   * The CD-capable slot (MediaTypes contains CD or DVD), or with `slot: 'usb'` the one that takes a
   * USB stick or floppy (where a config drive goes beside the ISO); `unsupported` when there is none.
   */
  async getVirtualMedia(slotKind: MediaSlot = 'cd'): Promise<VirtualMediaState & { etag?: string; actions: Json }> {
    const system = await this.getSystem();
    const collection = await this.virtualMediaCollection(system);
    if (!collection) throw this.fail('unsupported', `system ${this.systemPath} on ${this.origin} has no virtual media`);
    for (const path of await this.collectionMembers(collection)) {
      const { body, etag } = await this.getWithEtag(path);
      const types = arr(body.MediaTypes).filter((t): t is string => typeof t === 'string');
      if (SLOT_TYPES[slotKind].some((t) => types.includes(t))) {
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
    throw this.fail('unsupported', `system ${this.systemPath} on ${this.origin} has no ${SLOT_TYPES[slotKind].join('/')} virtual media slot in ${collection}`);
  }

  /** Inserts an ISO (by URL) into the CD slot (or `opts.slot`), ejecting another image first. */
  async insertMedia(imageUrl: string, opts: { writeProtected?: boolean; slot?: MediaSlot } = {}): Promise<void> {
    const kind = opts.slot ?? 'cd';
    let slot = await this.getVirtualMedia(kind);
    if (slot.inserted && slot.image === imageUrl) return;
    if (slot.inserted || slot.image) {
      await this.ejectMedia(kind);
      slot = await this.getVirtualMedia(kind);
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
    const after = await this.getVirtualMedia(kind);
    if (!after.inserted) {
      throw this.fail('bmc-fault', `Redfish BMC at ${this.origin} accepted the image for ${slot.path} but the slot shows nothing inserted`);
    }
  }

  /** Ejects whatever is in the CD slot (or `slotKind`'s; nothing to do when it is empty). */
  async ejectMedia(slotKind: MediaSlot = 'cd'): Promise<void> {
    const slot = await this.getVirtualMedia(slotKind);
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
