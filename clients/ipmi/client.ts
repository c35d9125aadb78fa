/**
 * IPMI power and boot-device control through ipmitool (lanplus), with the
 * answers parsed and failures typed (see ./ipmitool.ts for how ipmitool is
 * run and how the password is kept off its command line).
 */
import { pollPowerState } from '../bmc/power-poll';
import { IpmiError } from '../bmc/errors';
import { classifyIpmitoolFailure, runIpmitool, type IpmitoolOptions, type IpmitoolResult } from './ipmitool';

export type { IpmitoolOptions } from './ipmitool';

export type IpmiPowerState = 'on' | 'off';
/** `chassis power <action>`: soft asks the OS to shut down (ACPI), reset is a warm reset. */
export type IpmiPowerAction = 'on' | 'off' | 'soft' | 'cycle' | 'reset';
export type IpmiBootDevice = 'pxe' | 'disk' | 'cdrom' | 'bios';

export interface IpmiBootOptions {
  /** `options=efiboot`: boot in UEFI mode. */
  uefi?: boolean;
  /** `options=persistent`: every boot, not only the next one. */
  persistent?: boolean;
}

export interface IpmiBootParameter {
  /** What the BMC reports as the boot device selector; undefined for "No override". */
  device?: IpmiBootDevice | 'other';
  /** The selector text as ipmitool printed it. */
  selector?: string;
  persistent: boolean;
  uefi: boolean;
  valid: boolean;
}

export interface IpmiWaitOptions {
  timeoutMs?: number;
  pollIntervalMs?: number;
  onPoll?: (state: IpmiPowerState) => void;
}

export type IpmiClientOptions = IpmitoolOptions;


export function parsePowerStatus(stdout: string): IpmiPowerState | undefined {
  const m = /Chassis Power is (on|off)/i.exec(stdout);
  return m ? (m[1]!.toLowerCase() as IpmiPowerState) : undefined;
}

const SELECTORS: Array<[RegExp, IpmiBootDevice | 'other' | undefined]> = [
  [/No override/i, undefined],
  [/PXE/i, 'pxe'],
  [/Hard-?Drive/i, 'disk'],
  [/CD\/DVD/i, 'cdrom'],
  [/BIOS Setup/i, 'bios'],
];

/** Parses `ipmitool chassis bootparam get 5`. */
export function parseBootParameter(stdout: string): IpmiBootParameter {
  const selector = /Boot Device Selector\s*:\s*(.+)/.exec(stdout)?.[1]?.trim();
  let device: IpmiBootParameter['device'];
  if (selector) {
    const hit = SELECTORS.find(([re]) => re.test(selector));
    device = hit ? hit[1] : 'other';
  }
  return {
    device,
    selector,
    persistent: /Options apply to all future boots/i.test(stdout),
    uefi: /BIOS EFI boot/i.test(stdout),
    valid: /Boot Flag Valid/i.test(stdout),
  };
}

export class IpmiClient {
  readonly where: string;

  constructor(private readonly opts: IpmiClientOptions) {
    this.where = `${opts.host.includes(':') ? `[${opts.host}]` : opts.host}:${opts.port ?? 623}`;
  }

  /** Runs one ipmitool command (e.g. `['chassis', 'power', 'status']`). */
  run(command: readonly string[]): Promise<IpmitoolResult> {
    return runIpmitool(this.opts, command);
  }

  async getPowerState(): Promise<IpmiPowerState> {
    const { stdout } = await this.run(['chassis', 'power', 'status']);
    const state = parsePowerStatus(stdout);
    if (!state) {
      throw new IpmiError('bad-answer', `IPMI chassis power status on ${this.where}: unexpected answer "${stdout.trim().slice(0, 200)}"`);
    }
    return state;
  }

  async power(action: IpmiPowerAction): Promise<void> {
    const { stdout } = await this.run(['chassis', 'power', action]);
    if (!/Chassis Power Control:/i.test(stdout)) {
      throw new IpmiError('bad-answer', `IPMI chassis power ${action} on ${this.where}: unexpected answer "${stdout.trim().slice(0, 200)}"`);
    }
  }

  async waitForPowerState(target: IpmiPowerState, opts: IpmiWaitOptions = {}): Promise<void> {
    await pollPowerState(
      () => this.getPowerState(),
      target,
      opts,
      (state, seconds) => new IpmiError('timeout', `IPMI BMC at ${this.where}: chassis power still ${state} ${seconds} s after asking for ${target}`),
      this.opts.signal,
    );
  }


  /**
   * Reboot as Ironic does it: power off (hard) or soft (ACPI shutdown), wait
   * until the chassis reports off, then power on and wait until on. A host
   * that is off is only powered on.
   */
  async reboot(mode: 'hard' | 'soft', opts: IpmiWaitOptions & { offTimeoutMs?: number } = {}): Promise<void> {
    if ((await this.getPowerState()) === 'on') {
      await this.power(mode === 'soft' ? 'soft' : 'off');
      await this.waitForPowerState('off', { ...opts, timeoutMs: opts.offTimeoutMs ?? opts.timeoutMs });
    }
    await this.power('on');
    await this.waitForPowerState('on', opts);
  }

  /** `chassis bootdev <device> [options=efiboot,persistent]`. */
  async setBootDevice(device: IpmiBootDevice, options: IpmiBootOptions = {}): Promise<void> {
    const flags = [options.uefi ? 'efiboot' : undefined, options.persistent ? 'persistent' : undefined].filter(
      (f): f is string => f !== undefined,
    );
    const command = ['chassis', 'bootdev', device, ...(flags.length > 0 ? [`options=${flags.join(',')}`] : [])];
    const { stdout, stderr } = await this.run(command);
    // ipmitool exits 0 even when the BMC refuses a boot parameter; only the
    // missing confirmation and the "failed:" lines on stderr tell.
    if (!/Set Boot Device to/i.test(stdout)) {
      throw classifyIpmitoolFailure(`${stderr}\n${stdout}`, this.where, command.join(' '), this.opts.password);
    }
  }

  /** The boot flags parameter (5) as the BMC reports it. */
  async getBootParameter(): Promise<IpmiBootParameter> {
    const { stdout } = await this.run(['chassis', 'bootparam', 'get', '5']);
    return parseBootParameter(stdout);
  }
}
