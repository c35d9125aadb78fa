/**
 * A system's BIOS settings over Redfish: the `Bios` resource's current
 * `Attributes`, and its `@Redfish.Settings` SettingsObject where changes are
 * PATCHed as pending; the BMC applies them on the next reboot (the caller
 * reboots, then `biosMismatches` reads back what took).
 *
 * Values are compared as the BMC types them: a wanted value given as a
 * string ("0", "true") matches a numeric or boolean attribute of that value,
 * and is sent in the attribute's own type.
 */
import { RedfishError } from '../bmc/errors';
import { arr, obj, odataId, str, type Json } from './http';
import type { RedfishClient } from './client';

export type BiosValue = string | number | boolean | null;

export interface BiosState {
  /** The Bios resource, e.g. `/redfish/v1/Systems/1/Bios`. */
  path: string;
  attributes: Record<string, BiosValue>;
  /** Where pending changes go; the Bios resource itself when it names no SettingsObject. */
  settingsPath: string;
  /** Pending values that differ from the current ones. */
  pending: Record<string, BiosValue>;
  /** MessageIds the BMC attached to the last settings apply (e.g. `Base.1.0.SettingsFailed`), with the attributes they name. */
  settingsMessages: string[];
}

export interface BiosMismatch {
  name: string;
  want: BiosValue;
  have: BiosValue | undefined;
}

const values = (v: unknown): Record<string, BiosValue> => {
  const out: Record<string, BiosValue> = {};
  for (const [k, x] of Object.entries(obj(v))) {
    if (x === null || typeof x === 'string' || typeof x === 'number' || typeof x === 'boolean') out[k] = x;
  }
  return out;
};

/** `want` in the type of the attribute's current value (the BMC rejects "0" for an integer attribute). */
export function asBiosType(want: BiosValue, current: BiosValue | undefined): BiosValue {
  if (typeof want !== 'string') return want;
  if (typeof current === 'number' && want.trim() !== '' && Number.isFinite(Number(want))) return Number(want);
  if (typeof current === 'boolean' && (want === 'true' || want === 'false')) return want === 'true';
  return want;
}

const same = (a: BiosValue | undefined, b: BiosValue | undefined): boolean => a === b || (a !== undefined && b !== undefined && String(a) === String(b));

function settingsMessages(bios: Json): string[] {
  return arr(obj(bios['@Redfish.Settings']).Messages).map((m) => {
    const id = str(obj(m).MessageId) ?? 'unknown message';
    const related = arr(obj(m).RelatedProperties).filter((p): p is string => typeof p === 'string');
    return related.length > 0 ? `${id} (${related.join(', ')})` : id;
  });
}

async function biosPath(c: RedfishClient): Promise<string> {
  const path = odataId((await c.getSystem()).Bios);
  if (!path) throw new RedfishError('unsupported', `system ${c.systemPath} on ${c.origin} has no Bios resource`);
  return path;
}

/** The current attributes and what is pending in the SettingsObject. */
export async function readBios(c: RedfishClient): Promise<BiosState> {
  const path = await biosPath(c);
  const bios = await c.get(path);
  const attributes = values(bios.Attributes);
  const settingsPath = odataId(obj(bios['@Redfish.Settings']).SettingsObject) ?? path;
  const pending: Record<string, BiosValue> = {};
  if (settingsPath !== path) {
    for (const [k, v] of Object.entries(values((await c.get(settingsPath)).Attributes))) {
      if (!same(v, attributes[k])) pending[k] = v;
    }
  }
  return { path, attributes, settingsPath, pending, settingsMessages: settingsMessages(bios) };
}

/** Wanted settings the BIOS does not show now (`have` undefined: the BIOS has no such attribute). */
export function biosMismatches(attributes: Record<string, BiosValue>, want: Record<string, BiosValue>): BiosMismatch[] {
  return Object.entries(want)
    .filter(([name, value]) => !same(attributes[name], value))
    .map(([name, value]) => ({ name, want: value, have: attributes[name] }));
}

/**
 * PATCHes the settings the BIOS does not have yet into its SettingsObject
 * (pending until the next reboot). Nothing is sent when every one is current;
 * an attribute the BIOS does not have is refused before anything is sent.
 * Returns the names now pending.
 */
export async function setPendingBios(c: RedfishClient, want: Record<string, BiosValue>): Promise<string[]> {
  const state = await readBios(c);
  const unknown = Object.keys(want).filter((name) => !(name in state.attributes));
  if (unknown.length > 0) {
    const known = Object.keys(state.attributes).sort();
    throw new RedfishError(
      'rejected',
      `the BIOS of ${c.systemPath} on ${c.origin} has no attribute ${unknown.join(', ')} (it has ${known.slice(0, 40).join(', ')}${known.length > 40 ? ', …' : ''})`,
    );
  }
  const changes: Json = {};
  for (const { name, want: value } of biosMismatches(state.attributes, want)) changes[name] = asBiosType(value, state.attributes[name]);
  const names = Object.keys(changes);
  if (names.length === 0) return [];
  await c.patch(state.settingsPath, { Attributes: changes });
  return names;
}

export interface BiosApplyResult {
  /** Settings that were pending and took; empty when the BIOS already had them all (nothing sent, no reboot). */
  changed: string[];
  rebooted: boolean;
}

const RESTARTS = ['ForceRestart', 'PowerCycle', 'GracefulRestart'] as const;

/**
 * Sets `want` and makes it take: the settings the BIOS lacks go pending, the
 * system reboots (a restart when on; on, then off again, when off), and the
 * BIOS is read back until it shows them all (`bmc-fault` naming what did not
 * take, with the BMC's settings messages, after `timeoutMs`).
 */
export async function applyBios(
  c: RedfishClient,
  want: Record<string, BiosValue>,
  opts: { timeoutMs?: number; pollIntervalMs?: number; onPoll?: () => void } = {},
): Promise<BiosApplyResult> {
  const changed = await setPendingBios(c, want);
  if (changed.length === 0) return { changed, rebooted: false };
  const wasOn = (await c.getPowerState()) === 'On';
  const wait = { timeoutMs: opts.timeoutMs ?? 120_000, pollIntervalMs: opts.pollIntervalMs ?? 1000, onPoll: opts.onPoll };
  if (wasOn) {
    const allowed = await c.allowedResetTypes();
    await c.reset(RESTARTS.find((t) => !allowed || allowed.includes(t)) ?? 'ForceRestart');
  } else {
    await c.reset('On');
  }
  await c.waitForPowerState('On', wait);
  const deadline = Date.now() + wait.timeoutMs;
  for (;;) {
    const now = await readBios(c);
    const left = biosMismatches(now.attributes, want);
    if (left.length === 0) break;
    if (Date.now() > deadline) {
      const what = left.map((m) => `${m.name} is ${JSON.stringify(m.have)}, not ${JSON.stringify(m.want)}`).join('; ');
      const messages = now.settingsMessages.length > 0 ? ` (the BMC says: ${now.settingsMessages.join(', ')})` : '';
      throw new RedfishError('bmc-fault', `the BIOS of ${c.systemPath} on ${c.origin} did not take its pending settings after the reboot: ${what}${messages}`);
    }
    opts.onPoll?.();
    await new Promise((r) => setTimeout(r, wait.pollIntervalMs));
  }
  if (!wasOn) {
    await c.reset('ForceOff');
    await c.waitForPowerState('Off', wait);
  }
  return { changed, rebooted: true };
}
