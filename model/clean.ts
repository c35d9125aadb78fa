/**
 * Manual cleaning requests (`POST …/hosts/{name}/clean`): an ordered list of
 * named steps, Metal3-like, each carrying what it needs (RAID volumes in
 * Metal3's `spec.raid` shape, BIOS settings in `spec.firmware`'s shape or by
 * name, firmware images as HostFirmwareComponents' `spec.updates`). Pure validation: every layer (API, the host workflow's update
 * validator) refuses the same things with the same field names, before
 * anything is sent to Ironic. Ironic's wire format is in clients/ironic.
 */
import type { FieldError, Result } from './field-error';

export const CLEAN_STEP_NAMES = ['erase-metadata', 'erase-full', 'raid', 'bios', 'firmware'] as const;
export type CleanStepName = (typeof CLEAN_STEP_NAMES)[number];
/** Steps a `spec.provisioner: direct` host runs itself over Redfish (the others need Ironic). */
export const DIRECT_CLEAN_STEPS: readonly CleanStepName[] = ['bios', 'firmware'];
/** Steps that destroy data on the host's disks. */
export const ERASING_STEPS: readonly CleanStepName[] = ['erase-metadata', 'erase-full', 'raid'];

/** Metal3's hardware RAID levels (BMO's validation). */
export const HARDWARE_RAID_LEVELS = ['0', '1', '2', '5', '6', '1+0', '5+0', '6+0'] as const;
/** Metal3's software RAID levels (Ironic's agent builds md devices of these). */
export const SOFTWARE_RAID_LEVELS = ['0', '1', '1+0'] as const;

export interface HardwareRaidVolume {
  level: string;
  name?: string;
  /** Absent: the largest size the disks allow (Ironic's `MAX`). */
  sizeGibibytes?: number;
  numberOfPhysicalDisks?: number;
  physicalDisks?: string[];
  rotational?: boolean;
  controller?: string;
}

export interface SoftwareRaidVolume {
  level: string;
  sizeGibibytes?: number;
}

/** Metal3's `spec.raid`. */
export interface RaidConfig {
  hardwareRAIDVolumes?: HardwareRaidVolume[];
  softwareRAIDVolumes?: SoftwareRaidVolume[];
}

/** Metal3's `spec.firmware`. */
export interface FirmwareConfig {
  simultaneousMultithreadingEnabled?: boolean;
  sriovEnabled?: boolean;
  virtualizationEnabled?: boolean;
}

export type CleanStep =
  | { name: 'erase-metadata' }
  | { name: 'erase-full' }
  | { name: 'raid'; raid: RaidConfig }
  /** `settings`: BIOS attributes by the name the BMC uses (as HostFirmwareSettings' spec.settings). */
  | { name: 'bios'; firmware?: FirmwareConfig; settings?: Record<string, string> }
  /** Firmware images to flash, in order (Metal3's HostFirmwareComponents `spec.updates`). */
  | { name: 'firmware'; updates: FirmwareUpdate[] };

export const FIRMWARE_COMPONENTS = ['bios', 'bmc'] as const;
export type FirmwareComponent = (typeof FIRMWARE_COMPONENTS)[number];

export interface FirmwareUpdate {
  component: FirmwareComponent;
  /** http(s) only: the BMC (or Ironic) fetches it. */
  url: string;
  /**
   * The version the component reports once this image is on it (direct hosts): a component that already
   * reports it is not flashed. Ironic's firmware.update takes no version, so the Ironic path ignores it.
   */
  version?: string;
}

export interface CleanRequest {
  steps: CleanStep[];
}

const MAX_STEPS = 8;
const MAX_VOLUMES = 8;
const MAX_SETTINGS = 64;
const SETTING_NAME = /^[A-Za-z][A-Za-z0-9_.:-]{0,63}$/;
const WORD = /^[A-Za-z0-9_.:/-]{1,64}$/;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const list = (values: readonly string[]): string => values.join(', ');

/** Keys outside `accepted` are named, with what is accepted. */
function unknownKeys(obj: Record<string, unknown>, accepted: readonly string[], field: string, errors: FieldError[]): void {
  for (const key of Object.keys(obj)) {
    if (!accepted.includes(key)) errors.push({ field: `${field}.${key}`, reason: `unknown field; accepted: ${list(accepted)}` });
  }
}

const positiveInt = (v: unknown): boolean => typeof v === 'number' && Number.isInteger(v) && v >= 1 && v <= 1_000_000;

function levelAndSize(v: Record<string, unknown>, field: string, kind: string, levels: readonly string[], errors: FieldError[]): void {
  if (typeof v.level !== 'string' || !levels.includes(v.level)) {
    errors.push({ field: `${field}.level`, reason: `unsupported ${kind} level ${JSON.stringify(v.level)}; accepted: ${list(levels)}` });
  }
  if (v.sizeGibibytes !== undefined && !positiveInt(v.sizeGibibytes)) {
    errors.push({ field: `${field}.sizeGibibytes`, reason: 'must be a whole number of GiB, at least 1 (leave it out for the largest size)' });
  }
}

const HW_KEYS = ['level', 'name', 'sizeGibibytes', 'numberOfPhysicalDisks', 'physicalDisks', 'rotational', 'controller'] as const;

function hardwareVolume(v: unknown, field: string, errors: FieldError[]): HardwareRaidVolume | undefined {
  if (!isObject(v)) {
    errors.push({ field, reason: 'must be an object with level (and optionally name, sizeGibibytes, numberOfPhysicalDisks, physicalDisks, rotational, controller)' });
    return undefined;
  }
  unknownKeys(v, HW_KEYS, field, errors);
  const before = errors.length;
  levelAndSize(v, field, 'RAID', HARDWARE_RAID_LEVELS, errors);
  if (v.name !== undefined && (typeof v.name !== 'string' || !WORD.test(v.name))) errors.push({ field: `${field}.name`, reason: 'must be 1-64 letters, digits or _.:/-' });
  if (v.numberOfPhysicalDisks !== undefined && !positiveInt(v.numberOfPhysicalDisks)) errors.push({ field: `${field}.numberOfPhysicalDisks`, reason: 'must be a whole number, at least 1' });
  if (v.rotational !== undefined && typeof v.rotational !== 'boolean') errors.push({ field: `${field}.rotational`, reason: 'must be true or false' });
  if (v.controller !== undefined && (typeof v.controller !== 'string' || !WORD.test(v.controller))) errors.push({ field: `${field}.controller`, reason: 'must be 1-64 letters, digits or _.:/-' });
  if (v.physicalDisks !== undefined && (!Array.isArray(v.physicalDisks) || v.physicalDisks.length > 32 || !v.physicalDisks.every((d) => typeof d === 'string' && WORD.test(d)))) {
    errors.push({ field: `${field}.physicalDisks`, reason: 'must be a list of at most 32 disk names (1-64 letters, digits or _.:/-)' });
  }
  return errors.length === before ? (v as unknown as HardwareRaidVolume) : undefined;
}

function softwareVolume(v: unknown, field: string, errors: FieldError[]): SoftwareRaidVolume | undefined {
  if (!isObject(v)) {
    errors.push({ field, reason: 'must be an object with level (and optionally sizeGibibytes)' });
    return undefined;
  }
  unknownKeys(v, ['level', 'sizeGibibytes'], field, errors);
  const before = errors.length;
  levelAndSize(v, field, 'software RAID', SOFTWARE_RAID_LEVELS, errors);
  return errors.length === before ? (v as unknown as SoftwareRaidVolume) : undefined;
}

/** Metal3's spec.raid (a clean step's `raid`, the host's `spec.raid`), or undefined with errors named under `field`. */
export function raidConfig(v: unknown, field: string, errors: FieldError[]): RaidConfig | undefined {
  if (!isObject(v)) {
    errors.push({ field, reason: 'the raid step needs raid: {hardwareRAIDVolumes: [...]} or {softwareRAIDVolumes: [...]} (Metal3 spec.raid)' });
    return undefined;
  }
  unknownKeys(v, ['hardwareRAIDVolumes', 'softwareRAIDVolumes'], field, errors);
  const hw = v.hardwareRAIDVolumes;
  const sw = v.softwareRAIDVolumes;
  if (hw !== undefined && sw !== undefined) {
    errors.push({ field, reason: 'hardwareRAIDVolumes and softwareRAIDVolumes cannot both be set (as in Metal3)' });
    return undefined;
  }
  const volumes = hw ?? sw;
  const key = hw !== undefined ? 'hardwareRAIDVolumes' : 'softwareRAIDVolumes';
  if (!Array.isArray(volumes) || volumes.length === 0 || volumes.length > MAX_VOLUMES) {
    errors.push({ field: `${field}.${key}`, reason: `must be a list of 1 to ${MAX_VOLUMES} volumes` });
    return undefined;
  }
  const check = hw !== undefined ? hardwareVolume : softwareVolume;
  const out = volumes.map((vol, i) => check(vol, `${field}.${key}[${i}]`, errors));
  if (out.some((vol) => vol === undefined)) return undefined;
  return { [key]: out } as RaidConfig;
}

const FIRMWARE_KEYS = ['simultaneousMultithreadingEnabled', 'sriovEnabled', 'virtualizationEnabled'] as const;

/** Metal3's spec.firmware flags (a bios step's `firmware`, the host's `spec.firmware`), or undefined with errors under `field`. */
export function firmwareConfig(v: unknown, field: string, errors: FieldError[]): FirmwareConfig | undefined {
  if (!isObject(v)) {
    errors.push({ field, reason: `must be an object of ${list(FIRMWARE_KEYS)} (true or false)` });
    return undefined;
  }
  const before = errors.length;
  unknownKeys(v, FIRMWARE_KEYS, field, errors);
  for (const k of FIRMWARE_KEYS) {
    if (v[k] !== undefined && typeof v[k] !== 'boolean') errors.push({ field: `${field}.${k}`, reason: 'must be true or false' });
  }
  return errors.length === before ? (v as FirmwareConfig) : undefined;
}

function biosStep(step: Record<string, unknown>, field: string, errors: FieldError[]): CleanStep | undefined {
  const before = errors.length;
  const { firmware, settings } = step;
  if (firmware !== undefined) firmwareConfig(firmware, `${field}.firmware`, errors);
  if (settings !== undefined) {
    if (!isObject(settings) || Object.keys(settings).length > MAX_SETTINGS) {
      errors.push({ field: `${field}.settings`, reason: `must be an object of at most ${MAX_SETTINGS} BIOS settings, name → string value` });
    } else {
      for (const [name, value] of Object.entries(settings)) {
        if (!SETTING_NAME.test(name)) errors.push({ field: `${field}.settings.${name}`, reason: 'a setting name is a letter then up to 63 letters, digits or _.:-' });
        else if (typeof value !== 'string' || value.length === 0 || value.length > 256) errors.push({ field: `${field}.settings.${name}`, reason: 'must be a string of 1-256 characters' });
      }
    }
  }
  if (errors.length !== before) return undefined;
  const count = Object.keys((firmware as Record<string, unknown> | undefined) ?? {}).length + Object.keys((settings as Record<string, unknown> | undefined) ?? {}).length;
  if (count === 0) {
    errors.push({ field, reason: `the bios step needs firmware (${list(FIRMWARE_KEYS)}) or settings (name → value)` });
    return undefined;
  }
  return {
    name: 'bios',
    ...(firmware !== undefined ? { firmware: firmware as FirmwareConfig } : {}),
    ...(settings !== undefined ? { settings: settings as Record<string, string> } : {}),
  };
}

function firmwareStep(v: unknown, field: string, errors: FieldError[]): CleanStep | undefined {
  const shape = `a list of 1 to ${MAX_VOLUMES} updates {component: ${list(FIRMWARE_COMPONENTS)}, url: http(s) URL, version (optional)}`;
  if (!Array.isArray(v) || v.length === 0 || v.length > MAX_VOLUMES) {
    errors.push({ field, reason: `the firmware step needs updates: ${shape}` });
    return undefined;
  }
  const before = errors.length;
  v.forEach((u, i) => {
    const at = `${field}[${i}]`;
    if (!isObject(u)) return void errors.push({ field: at, reason: `must be {component: ${list(FIRMWARE_COMPONENTS)}, url: http(s) URL}` });
    unknownKeys(u, ['component', 'url', 'version'], at, errors);
    if (typeof u.component !== 'string' || !(FIRMWARE_COMPONENTS as readonly string[]).includes(u.component)) {
      errors.push({ field: `${at}.component`, reason: `unknown firmware component ${JSON.stringify(u.component)}; accepted: ${list(FIRMWARE_COMPONENTS)}` });
    }
    if (!httpUrl(u.url)) errors.push({ field: `${at}.url`, reason: 'must be an http or https URL of at most 2048 characters (the BMC fetches it)' });
    if (u.version !== undefined && (typeof u.version !== 'string' || !VERSION_TEXT.test(u.version))) {
      errors.push({ field: `${at}.version`, reason: 'must be the version the component reports once flashed: 1-64 letters, digits, spaces or ._+-, starting with a letter or digit' });
    }
  });
  return errors.length === before ? { name: 'firmware', updates: v as FirmwareUpdate[] } : undefined;
}

const VERSION_TEXT = /^[A-Za-z0-9][A-Za-z0-9 ._+-]{0,63}$/;

function httpUrl(v: unknown): boolean {
  if (typeof v !== 'string' || v.length > 2048) return false;
  try {
    const u = new URL(v);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  } catch {
    return false;
  }
}

const STEP_KEYS: Record<CleanStepName, readonly string[]> = {
  'erase-metadata': ['name'],
  'erase-full': ['name'],
  raid: ['name', 'raid'],
  bios: ['name', 'firmware', 'settings'],
  firmware: ['name', 'updates'],
};

function cleanStep(v: unknown, field: string, errors: FieldError[]): CleanStep | undefined {
  if (!isObject(v)) {
    errors.push({ field, reason: `must be an object with a name (${list(CLEAN_STEP_NAMES)})` });
    return undefined;
  }
  const name = v.name;
  if (typeof name !== 'string' || !(CLEAN_STEP_NAMES as readonly string[]).includes(name)) {
    errors.push({ field: `${field}.name`, reason: `unknown clean step ${JSON.stringify(name)}; accepted: ${list(CLEAN_STEP_NAMES)}` });
    return undefined;
  }
  const step = name as CleanStepName;
  const before = errors.length;
  unknownKeys(v, STEP_KEYS[step], field, errors);
  if (errors.length !== before) return undefined;
  switch (step) {
    case 'erase-metadata':
    case 'erase-full':
      return { name: step };
    case 'raid': {
      const raid = raidConfig(v.raid, `${field}.raid`, errors);
      return raid ? { name: 'raid', raid } : undefined;
    }
    case 'bios':
      return biosStep(v, field, errors);
    case 'firmware':
      return firmwareStep(v.updates, `${field}.updates`, errors);
  }
}

/** The request as sent (`body`), or every field error found in it. */
export function validateCleanRequest(body: unknown): Result<CleanRequest> {
  const errors: FieldError[] = [];
  if (!isObject(body)) return { ok: false, errors: [{ field: 'body', reason: `must be an object {"steps": [...]}, steps named ${list(CLEAN_STEP_NAMES)}` }] };
  for (const key of Object.keys(body)) {
    if (key !== 'steps') errors.push({ field: key, reason: 'unknown field; accepted: steps' });
  }
  const steps = body.steps;
  if (!Array.isArray(steps) || steps.length === 0 || steps.length > MAX_STEPS) {
    errors.push({ field: 'steps', reason: `must be a list of 1 to ${MAX_STEPS} steps, each named ${list(CLEAN_STEP_NAMES)}` });
    return { ok: false, errors };
  }
  const out = steps.map((s, i) => cleanStep(s, `steps[${i}]`, errors));
  const seen = new Set<string>();
  out.forEach((s, i) => {
    if (!s) return;
    if (seen.has(s.name)) errors.push({ field: `steps[${i}].name`, reason: `step ${s.name} is listed twice; each step runs once per request` });
    seen.add(s.name);
  });
  if (errors.length > 0) return { ok: false, errors };
  return { ok: true, value: { steps: out as CleanStep[] } };
}

export const stepNames = (request: CleanRequest): string[] => request.steps.map((s) => s.name);
