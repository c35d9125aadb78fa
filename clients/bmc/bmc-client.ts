/**
 * One small interface over the BMC protocols, so activities can manage power,
 * boot device, inventory and virtual media without caring whether the host
 * has a Redfish or an IPMI BMC. `openBmc` picks the implementation from the
 * parsed BMC address (`parseBmcAddress` in model/bmc.ts).
 *
 * Power changes wait (by default) until the host reports the new state, and
 * reboots are "power off, wait for off, power on" for both protocols, as
 * Ironic does for IPMI; a soft reboot asks the OS to shut down and fails with
 * a `timeout` error if the host is not off within `offTimeoutMs`, so the
 * caller can fall back to a hard one (Metal3's reboot annotation semantics).
 */
import { BMC_TYPE_TABLE, type BmcAccess } from '../../model/bmc';
import type { HardwareDetails } from '../../model/host';
import { BmcError, IpmiError, RedfishError, type BmcProtocol } from './errors';
import { IpmiClient, type IpmitoolOptions } from '../ipmi/client';
import { RedfishClient, type BootTarget, type MediaSlot, type RedfishClientOptions, type ResetType } from '../redfish/client';

export { BmcError, IpmiError, RedfishError, isBmcError, RETRYABLE_BMC_ERROR_KINDS, type BmcErrorKind, type BmcProtocol } from './errors';

export type PowerState = 'on' | 'off' | 'powering-on' | 'powering-off';
export type PowerTarget = 'on' | 'off' | 'soft-off';
export type RebootMode = 'hard' | 'soft';
export type BootDevice = 'pxe' | 'disk' | 'cdrom' | 'uefi-http';

export interface BmcCredentials {
  username: string;
  password: string;
}

export interface BootDeviceOptions {
  /** Every boot (Redfish Continuous, IPMI persistent); default next boot only. */
  persistent?: boolean;
  /** Boot mode; left as the BMC has it when omitted (IPMI: legacy unless UEFI). */
  mode?: 'UEFI' | 'Legacy';
  /** Redfish `uefi-http` only: Boot.HttpBootUri. */
  httpBootUri?: string;
}

export interface PowerOptions {
  /** Wait until the host reports the target state. Default true. */
  wait?: boolean;
  /** How long to wait. Default 120 s. */
  timeoutMs?: number;
  /** Default 1 s. */
  pollIntervalMs?: number;
  /** Called after each power-state poll (heartbeat here). */
  onPoll?: (state: string | undefined) => void;
}

export interface RebootOptions extends PowerOptions {
  /** How long the host may take to be off after the off/soft-off request. Default `timeoutMs`. */
  offTimeoutMs?: number;
}

export interface BmcClient {
  readonly protocol: BmcProtocol;
  getPower(): Promise<PowerState>;
  setPower(target: PowerTarget, opts?: PowerOptions): Promise<void>;
  /** Sends the power request alone: no read before, no wait after (the caller has read the BMC and decided). */
  requestPower(target: PowerTarget): Promise<void>;
  /** Waits until the host reports `state` (the protocol's `timeout` error at the deadline). */
  waitPower(state: 'on' | 'off', opts?: PowerOptions): Promise<void>;
  reboot(mode: RebootMode, opts?: RebootOptions): Promise<void>;
  setBootDevice(device: BootDevice, opts?: BootDeviceOptions): Promise<void>;
  /** Out-of-band inventory (Redfish only). */
  getInventory?(): Promise<HardwareDetails>;
  /** Virtual media on the CD slot, or the USB stick/floppy slot with `slot: 'usb'` (Redfish only). */
  insertMedia?(imageUrl: string, slot?: MediaSlot): Promise<void>;
  ejectMedia?(slot?: MediaSlot): Promise<void>;
  /** Ends the session (Redfish) and releases connections. */
  close(): Promise<void>;
}

export interface OpenBmcOptions {
  /** Redfish over HTTPS: skip certificate verification (BMO's `disableCertificateVerification`). */
  disableCertificateVerification?: boolean;
  /** Per HTTP request (Redfish) or per ipmitool run (IPMI). */
  timeoutMs?: number;
  /** Cancels every request and wait (a cancelled activity): they throw the signal's reason. */
  signal?: AbortSignal;
  redfish?: Partial<Omit<RedfishClientOptions, 'endpoint' | 'username' | 'password'>>;
  ipmi?: Partial<Omit<IpmitoolOptions, 'host' | 'port' | 'username' | 'password'>>;
}

const REDFISH_POWER: Record<string, PowerState> = {
  On: 'on',
  Off: 'off',
  PoweringOn: 'powering-on',
  PoweringOff: 'powering-off',
  Paused: 'on',
};

const REDFISH_BOOT: Record<BootDevice, BootTarget> = { pxe: 'Pxe', disk: 'Hdd', cdrom: 'Cd', 'uefi-http': 'UefiHttp' };

export class RedfishBmc implements BmcClient {
  readonly protocol = 'redfish' as const;

  constructor(readonly redfish: RedfishClient) {}

  async getPower(): Promise<PowerState> {
    const raw = await this.redfish.getPowerState();
    const state = raw ? REDFISH_POWER[raw] : undefined;
    if (!state) throw new RedfishError('bad-answer', `system ${this.redfish.systemPath} on ${this.redfish.origin} reports no usable PowerState (${raw ?? 'none'})`);
    return state;
  }

  private async pick(preferred: ResetType, fallback?: ResetType): Promise<ResetType> {
    if (!fallback) return preferred;
    const allowed = await this.redfish.allowedResetTypes();
    return !allowed || allowed.includes(preferred) || !allowed.includes(fallback) ? preferred : fallback;
  }

  private async wait(target: 'On' | 'Off', opts: PowerOptions): Promise<void> {
    if (opts.wait === false) return;
    await this.redfish.waitForPowerState(target, opts);
  }

  async setPower(target: PowerTarget, opts: PowerOptions = {}): Promise<void> {
    const now = await this.getPower();
    if (target === 'on') {
      if (now !== 'on' && now !== 'powering-on') await this.redfish.reset(await this.pick('On', 'ForceOn'));
      await this.wait('On', opts);
    } else {
      if (now !== 'off' && now !== 'powering-off') await this.redfish.reset(target === 'soft-off' ? 'GracefulShutdown' : 'ForceOff');
      await this.wait('Off', opts);
    }
  }

  async requestPower(target: PowerTarget): Promise<void> {
    await this.redfish.reset(target === 'on' ? await this.pick('On', 'ForceOn') : target === 'soft-off' ? 'GracefulShutdown' : 'ForceOff');
  }

  async waitPower(state: 'on' | 'off', opts: PowerOptions = {}): Promise<void> {
    await this.redfish.waitForPowerState(state === 'on' ? 'On' : 'Off', opts);
  }

  async reboot(mode: RebootMode, opts: RebootOptions = {}): Promise<void> {
    const now = await this.getPower();
    if (now !== 'off') {
      await this.redfish.reset(mode === 'soft' ? 'GracefulShutdown' : 'ForceOff');
      await this.redfish.waitForPowerState('Off', { ...opts, timeoutMs: opts.offTimeoutMs ?? opts.timeoutMs });
    }
    await this.redfish.reset(await this.pick('On', 'ForceOn'));
    await this.wait('On', opts);
  }

  async setBootDevice(device: BootDevice, opts: BootDeviceOptions = {}): Promise<void> {
    await this.redfish.setBootOverride({
      target: REDFISH_BOOT[device],
      enabled: opts.persistent ? 'Continuous' : 'Once',
      mode: opts.mode,
      httpBootUri: opts.httpBootUri,
    });
  }

  getInventory(): Promise<HardwareDetails> {
    return this.redfish.getInventory();
  }

  insertMedia(imageUrl: string, slot: MediaSlot = 'cd'): Promise<void> {
    return this.redfish.insertMedia(imageUrl, { slot });
  }

  ejectMedia(slot: MediaSlot = 'cd'): Promise<void> {
    return this.redfish.ejectMedia(slot);
  }

  close(): Promise<void> {
    return this.redfish.close();
  }
}

export class IpmiBmc implements BmcClient {
  readonly protocol = 'ipmi' as const;

  constructor(readonly ipmi: IpmiClient) {}

  getPower(): Promise<PowerState> {
    return this.ipmi.getPowerState();
  }

  async setPower(target: PowerTarget, opts: PowerOptions = {}): Promise<void> {
    const now = await this.ipmi.getPowerState();
    const want = target === 'on' ? 'on' : 'off';
    if (now !== want) await this.ipmi.power(target === 'on' ? 'on' : target === 'soft-off' ? 'soft' : 'off');
    if (opts.wait !== false) await this.ipmi.waitForPowerState(want, opts);
  }

  async requestPower(target: PowerTarget): Promise<void> {
    await this.ipmi.power(target === 'on' ? 'on' : target === 'soft-off' ? 'soft' : 'off');
  }

  async waitPower(state: 'on' | 'off', opts: PowerOptions = {}): Promise<void> {
    await this.ipmi.waitForPowerState(state, opts);
  }

  async reboot(mode: RebootMode, opts: RebootOptions = {}): Promise<void> {
    await this.ipmi.reboot(mode, opts);
  }

  async setBootDevice(device: BootDevice, opts: BootDeviceOptions = {}): Promise<void> {
    if (device === 'uefi-http') {
      throw new IpmiError('unsupported', `IPMI BMC at ${this.ipmi.where}: booting from UEFI HTTP needs a Redfish BMC`);
    }
    await this.ipmi.setBootDevice(device, { uefi: opts.mode === 'UEFI', persistent: opts.persistent === true });
  }

  async close(): Promise<void> {
    // ipmitool runs one session per command: nothing to release.
  }
}

/**
 * Connects to the BMC a parsed address names: Redfish-family types get a
 * `RedfishBmc` (service root read, session created, system found), `ipmi`
 * an `IpmiBmc` (nothing is sent until the first call). `fake` BMCs exist only
 * in Ironic's fake-hardware driver and are refused as `unsupported`.
 */
export async function openBmc(access: BmcAccess, creds: BmcCredentials, opts: OpenBmcOptions = {}): Promise<BmcClient> {
  const family = BMC_TYPE_TABLE[access.type].family;
  switch (family) {
    case 'redfish': {
      const client = await RedfishClient.connect({
        ...opts.redfish,
        endpoint: access,
        username: creds.username,
        password: creds.password,
        disableCertificateVerification: opts.disableCertificateVerification ?? opts.redfish?.disableCertificateVerification,
        timeoutMs: opts.timeoutMs ?? opts.redfish?.timeoutMs,
        signal: opts.signal ?? opts.redfish?.signal,
      });
      return new RedfishBmc(client);
    }
    case 'ipmi':
      return new IpmiBmc(
        new IpmiClient({
          ...opts.ipmi,
          host: access.host,
          port: access.port,
          username: creds.username,
          password: creds.password,
          // BMO's ?privilegelevel= on the address, as Ironic's ipmi_priv_level.
          privilegeLevel: access.privilegeLevel ?? opts.ipmi?.privilegeLevel,
          timeoutMs: opts.timeoutMs ?? opts.ipmi?.timeoutMs,
          signal: opts.signal ?? opts.ipmi?.signal,
        }),
      );
    case 'fake':
      throw new BmcError('unsupported', 'redfish', `BMC type fake (${access.address}) has no BMC to speak to; it exists only in Ironic's fake-hardware driver`);
  }
}

/**
 * Enrollment pre-flight: can we reach the BMC and do the credentials work?
 * Returns the power state, or throws a typed `BmcError` naming the cause.
 */
export async function checkBmc(access: BmcAccess, creds: BmcCredentials, opts: OpenBmcOptions = {}): Promise<PowerState> {
  const bmc = await openBmc(access, creds, opts);
  try {
    return await bmc.getPower();
  } finally {
    await bmc.close();
  }
}
