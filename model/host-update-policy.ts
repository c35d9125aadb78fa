/**
 * Metal3's `HostUpdatePolicy` (metal3.io/v1alpha1): whether a provisioned
 * host, of the same name and namespace, takes changed firmware settings and
 * firmware updates through Ironic's servicing. `onReboot` allows it (applied
 * when the host next reboots, as BMO does); `onPreparing` or no policy
 * leaves them to the next preparing (deprovision first), Metal3's default.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import type { FieldError } from './field-error';
import type { CleanStepName } from './clean';

export const UPDATE_POLICY = {
  group: 'metal3.io',
  version: 'v1alpha1',
  kind: 'HostUpdatePolicy',
  plural: 'hostupdatepolicies',
  singular: 'hostupdatepolicy',
} as const;

export const UPDATE_POLICY_MODES = ['onPreparing', 'onReboot'] as const;
export type UpdatePolicyMode = (typeof UPDATE_POLICY_MODES)[number];

const mode = (description: string) => Type.Optional(Type.Union(UPDATE_POLICY_MODES.map((m) => Type.Literal(m)), { description }));

export const HostUpdatePolicySpecSchema = Type.Object(
  {
    firmwareSettings: mode('Firmware (BIOS) settings: onReboot applies changes to a provisioned host by servicing at its next reboot'),
    firmwareUpdates: mode('Firmware updates: onReboot applies them to a provisioned host by servicing'),
  },
  { additionalProperties: false, description: 'When a provisioned host takes firmware changes' },
);
export type HostUpdatePolicySpec = Static<typeof HostUpdatePolicySpecSchema>;

/** Field-named errors in a policy spec (`spec.firmwareSettings: "always" is not accepted; accepted: onPreparing, onReboot`). */
export function updatePolicyErrors(value: unknown, at = 'spec'): FieldError[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return [{ field: at, reason: 'must be an object with firmwareSettings and/or firmwareUpdates' }];
  const errors: FieldError[] = [];
  for (const [key, v] of Object.entries(value)) {
    if (key !== 'firmwareSettings' && key !== 'firmwareUpdates') errors.push({ field: `${at}.${key}`, reason: 'unknown field; accepted: firmwareSettings, firmwareUpdates' });
    else if (v !== undefined && v !== null && !(UPDATE_POLICY_MODES as readonly unknown[]).includes(v)) {
      errors.push({ field: `${at}.${key}`, reason: `${JSON.stringify(v)} is not accepted; accepted: ${UPDATE_POLICY_MODES.join(', ')}` });
    }
  }
  return errors;
}

/** The policy as stored: null values (Metal3's "not set") dropped; the value passed updatePolicyErrors. */
export function normalUpdatePolicy(value: Record<string, unknown>): HostUpdatePolicySpec {
  const out = Object.fromEntries(Object.entries(value).filter(([, v]) => v !== null && v !== undefined));
  return Value.Check(HostUpdatePolicySpecSchema, out) ? out : {};
}

/** Which policy entry lets a named step run on a provisioned host (servicing), or undefined: never serviced. */
export function policyEntryFor(step: CleanStepName): keyof HostUpdatePolicySpec | undefined {
  if (step === 'bios') return 'firmwareSettings';
  if (step === 'firmware') return 'firmwareUpdates';
  return undefined;
}

/** Whether `policy` lets a provisioned host be serviced with `step`. */
export const servicingAllows = (policy: HostUpdatePolicySpec | undefined, step: CleanStepName): boolean => {
  const entry = policyEntryFor(step);
  return entry !== undefined && policy?.[entry] === 'onReboot';
};
