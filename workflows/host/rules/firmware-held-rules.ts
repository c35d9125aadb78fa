/**
 * What is done with a held HostFirmwareSettings / HostFirmwareComponents change
 * on a provisioned host (the update in
 * firmware-held.ts): which of its steps the HostUpdatePolicy lets the next
 * service take, how they join spec.firmware's, and why the rest waits. Pure,
 * like decide().
 */
import type { CleanStep } from '../../../model/clean';
import { policyEntryFor, servicingAllows } from '../../../model/host-update-policy';
import type { HostState } from '../../../contracts/host';

/** Images first: a new BIOS may bring settings of its own (as the controller orders a clean's steps). */
const ORDER: Record<string, number> = { firmware: 0, bios: 1 };
const ordered = (steps: CleanStep[]): CleanStep[] => [...steps].sort((a, b) => (ORDER[a.name] ?? 2) - (ORDER[b.name] ?? 2));

/** The held steps the host's policy lets servicing take now, firmware before bios. */
export function heldServiceable(s: HostState): CleanStep[] {
  if (!s.firmwareHeld || !s.updatePolicy || s.status.provisioning.state !== 'provisioned') return [];
  return ordered(s.firmwareHeld.request.steps.filter((step) => servicingAllows(s.updatePolicy, step.name)));
}

/**
 * One service's steps: the held ones the policy allows, then spec.firmware's flags (already allowed by
 * servicing-rules.ts). Both bios changes go in one bios step (the settings by name win over the flags, as
 * BMO lets HostFirmwareSettings win): a BIOS applies one configuration per reboot.
 */
export function withHeld(held: CleanStep[], spec: CleanStep[]): CleanStep[] {
  if (held.length === 0) return spec;
  const flags = spec.find((step) => step.name === 'bios');
  const out = held.map((step) => (step.name === 'bios' && flags?.name === 'bios' && flags.firmware ? { ...step, firmware: flags.firmware } : step));
  const merged = out.some((step) => step.name === 'bios');
  return [...out, ...spec.filter((step) => !(merged && step.name === 'bios'))];
}

/** After a service that took `steps` of the held change `id`: they are done; the rest (not allowed yet) stays held. */
export function settleHeld(s: HostState, id: number, steps: CleanStep[], at: string): void {
  const updates = steps.flatMap((step) => (step.name === 'firmware' ? step.updates : []));
  const settings = Object.assign({}, ...steps.map((step) => (step.name === 'bios' ? (step.settings ?? {}) : {}))) as Record<string, string>;
  s.firmwareServiced = { ...(updates.length > 0 ? { updates } : {}), ...(Object.keys(settings).length > 0 ? { settings } : {}), at };
  if (s.firmwareHeld?.id !== id) return;
  const done = new Set(steps.map((step) => step.name));
  const left = s.firmwareHeld.request.steps.filter((step) => !done.has(step.name));
  if (left.length === 0) delete s.firmwareHeld;
  else s.firmwareHeld = { ...s.firmwareHeld, request: { steps: left } };
}

const describe = (step: CleanStep): string =>
  step.name === 'firmware'
    ? `HostFirmwareComponents updates (${step.updates.map((u) => u.component).join(', ')})`
    : `HostFirmwareSettings change (${Object.keys(step.name === 'bios' ? (step.settings ?? {}) : {}).sort().join(', ')})`;

/** Why each held step waits: the reboot it is serviced at, or the policy entry it needs. */
export function firmwareHeldReason(s: HostState): string | undefined {
  if (!s.firmwareHeld || s.status.provisioning.state !== 'provisioned') return undefined;
  const why = ordered(s.firmwareHeld.request.steps).map((step) => {
    const entry = policyEntryFor(step.name) ?? 'firmwareSettings';
    const at = `${describe(step)} held while the host is provisioned`;
    if (servicingAllows(s.updatePolicy, step.name)) return `${at}: applied by servicing at the host's next reboot (HostUpdatePolicy ${entry}: onReboot); reboot it to apply now`;
    const has = s.updatePolicy?.[entry] ? `${entry} is ${s.updatePolicy[entry]}` : s.updatePolicy ? `${entry} is not set` : 'the host has none';
    return `${at}: needs a HostUpdatePolicy with ${entry}: onReboot to be applied by servicing (${has}); or deprovision it (remove the image) to apply at the next preparing`;
  });
  return why.join('; ');
}

/**
 * A deprovisioned host's held change: the available host takes it as its clean,
 * as it takes a HostFirmwareSettings change (BMO applies both while preparing). A clean already asked for
 * keeps its steps; the held steps it lacks join it (the API's caller need not PUT it again).
 */
export function heldToClean(s: HostState, at: string): void {
  const held = s.firmwareHeld;
  if (!held) return;
  const pending = s.cleanRequest;
  if (!pending) {
    s.cleanRequest = { request: { steps: ordered(held.request.steps) }, id: held.id, at, held: true };
    return;
  }
  const names = new Set(pending.request.steps.map((step) => step.name));
  const missing = held.request.steps.filter((step) => !names.has(step.name));
  if (missing.length > 0) s.cleanRequest = { ...pending, request: { steps: [...pending.request.steps, ...missing] }, held: true };
}
