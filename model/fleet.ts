/**
 * A fleet operation's input: which hosts, what to do to each, how many at
 * once and how many may fail. One TypeBox schema serves the API's body, the
 * OpenAPI document and the workflow's own check of a `temporal workflow
 * start` input, so a bad input names its field wherever it comes from.
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import type { FieldError, Result } from './field-error';
import { ImageSchema, MAX_LENGTH, PROVISIONING_STATES } from './host';
import { validateImage } from './image';
import { LabelSelectorSchema, validateLabelSelector } from './labels';
import { BMC_TYPES } from './bmc';
import { schemaErrors } from './validate';
import { validateHostRef } from './host-ref';
import { validateCleanRequest } from './clean';
import { RemediationInputSchema, strategyPairingError, type RemediationStrategy } from './remediation';
import { siteErrors } from './site';

const closed = { additionalProperties: false } as const;
const DNS_LABEL = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';
/** The fleet's name is a power-off key too (`fleet-<name>`: 63 characters at most), so 57 characters. */
export const MAX_FLEET_NAME = 57;
const FleetName = Type.String({ minLength: 1, maxLength: MAX_FLEET_NAME, pattern: DNS_LABEL, description: 'DNS-1123 label, at most 57 characters' });
const RebootMode = Type.Union([Type.Literal('soft'), Type.Literal('hard')], { description: 'soft (default) or hard' });

/** What is done to each host, always through its host workflow's own updates. */
export const FLEET_OPERATIONS = {
  reboot: Type.Object({ kind: Type.Literal('reboot'), mode: Type.Optional(RebootMode) }, closed),
  powerOff: Type.Object({ kind: Type.Literal('powerOff'), mode: Type.Optional(RebootMode) }, closed),
  powerOn: Type.Object(
    {
      kind: Type.Literal('powerOn'),
      fromFleet: Type.Optional({ ...FleetName, description: "Release only this powerOff fleet's hold; default: every fleet's" }),
    },
    closed,
  ),
  provision: Type.Object({ kind: Type.Literal('provision'), image: ImageSchema }, closed),
  deprovision: Type.Object({ kind: Type.Literal('deprovision') }, closed),
  delete: Type.Object({ kind: Type.Literal('delete') }, closed),
  reinspect: Type.Object({ kind: Type.Literal('reinspect') }, closed),
  detach: Type.Object(
    {
      kind: Type.Literal('detach'),
      deleteAction: Type.Optional(
        Type.Union([Type.Literal('delete'), Type.Literal('delay')], { description: "Metal3's detached deleteAction: delete (default) or delay (a delete waits until attached again)" }),
      ),
      force: Type.Optional(Type.Boolean({ description: 'Detach in any registered state, not only provisioned, externally provisioned or available (default false)' })),
    },
    closed,
  ),
  attach: Type.Object({ kind: Type.Literal('attach') }, closed),
  clean: Type.Object(
    {
      kind: Type.Literal('clean'),
      steps: Type.Array(Type.Unknown(), { description: 'a manual clean\'s named steps, as POST …/clean takes them (erase-metadata, erase-full, raid, bios, firmware)' }),
    },
    closed,
  ),
  moveSite: Type.Object(
    {
      kind: Type.Literal('moveSite'),
      site: Type.String({ minLength: 1, maxLength: 63, pattern: DNS_LABEL, description: 'The configured site each host moves to (docs/sites.md): adopted there as it is, no deploy or power change' }),
    },
    { ...closed, description: "Moves each host to this site, as a PUT of its spec.site does (API mode; a host already there succeeds at once)" },
  ),
  remediate: Type.Object(
    {
      kind: Type.Literal('remediate'),
      strategy: RemediationInputSchema.properties.strategy,
      nodeHandling: RemediationInputSchema.properties.nodeHandling,
    },
    { ...closed, description: 'A remediation of each host (its own remediateWorkflow, or a HostRemediation for a BareMetalHost) with this strategy' },
  ),
} as const;
export type FleetOperationKind = keyof typeof FLEET_OPERATIONS;
export const FLEET_OPERATION_KINDS = Object.keys(FLEET_OPERATIONS) as FleetOperationKind[];
export const FleetOperationSchema = Type.Union(Object.values(FLEET_OPERATIONS));
export type FleetOperation = Static<typeof FleetOperationSchema>;

const HostRefSchema = Type.Object(
  { namespace: Type.String({ maxLength: MAX_LENGTH.label }), name: Type.String({ maxLength: MAX_LENGTH.name }) },
  closed,
);

export const FleetSelectorSchema = Type.Object(
  {
    namespace: Type.Optional(Type.String({ maxLength: MAX_LENGTH.label, pattern: DNS_LABEL })),
    labelSelector: Type.Optional(LabelSelectorSchema),
    states: Type.Optional(Type.Array(Type.Union(PROVISIONING_STATES.filter((s) => s !== '').map((s) => Type.Literal(s))), { minItems: 1, maxItems: 16 })),
    bmcTypes: Type.Optional(Type.Array(Type.Union(BMC_TYPES.map((t) => Type.Literal(t))), { minItems: 1, maxItems: 16 })),
    hosts: Type.Optional(Type.Array(HostRefSchema, { minItems: 1, maxItems: 10_000 })),
    sites: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 63, pattern: DNS_LABEL }), {
        minItems: 1,
        maxItems: 100,
        description: 'Hosts of these sites (spec.site; the label metalflow.io/site in Kubernetes mode), each a configured site; "default" names the hosts with none',
      }),
    ),
  },
  { ...closed, description: 'Hosts that match every criterion given (at least one is required)' },
);
export type FleetSelector = Static<typeof FleetSelectorSchema>;

/** A count, or a percentage of the selected hosts ("10%"). */
const Amount = (description: string) =>
  Type.Union([Type.Integer({ minimum: 0, maximum: 100_000 }), Type.String({ pattern: '^(100|[1-9]?[0-9])%$' })], { description });

export const FleetInputSchema = Type.Object(
  {
    name: { ...FleetName, description: 'The fleet operation; its workflow id is fleet/<name>' },
    operation: FleetOperationSchema,
    selector: FleetSelectorSchema,
    maxConcurrent: Type.Optional(Amount('Hosts in flight at once: a count (at least 1) or a percentage of the selected hosts, rounded up (default 1)')),
    maxConcurrentPerSite: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 100_000,
        description: 'Hosts of one site in flight at once, within maxConcurrent (which, unset, is then no limit across sites): a site at its cap waits while the other sites go on',
      }),
    ),
    maxFailures: Type.Optional(Amount('Failures tolerated: one more halts the run (default 0); a count or a percentage of the selected hosts, rounded down')),
    hostTimeoutSeconds: Type.Optional(Type.Integer({ minimum: 10, maximum: 7 * 24 * 3600, description: 'How long one host may take (default 3600)' })),
    dryRun: Type.Optional(Type.Boolean({ description: 'Only report what would be selected and done' })),
    waves: Type.Optional(
      Type.Array(Type.Object({ size: Amount('Hosts in this wave: a count (at least 1) or a percentage of the selected hosts, rounded up') }, closed), {
        minItems: 1,
        maxItems: 100,
        description: 'Waves in order (e.g. a 1-host canary, then 10%); the last size repeats until every selected host is in one. A wave starts once the one before it has finished',
      }),
    ),
    pauseAfterWave: Type.Optional(Type.Boolean({ description: 'Pause after each wave but the last, until resumed (needs waves)' })),
  },
  closed,
);
export type FleetInput = Static<typeof FleetInputSchema>;
export type FleetAmount = NonNullable<FleetInput['maxConcurrent']>;

export const DEFAULT_HOST_TIMEOUT_SECONDS = 3600;

/** The rule of an Amount field, which the schema's union alone would state as "must be an integer or a string". */
const amountRule = (least: 0 | 1): string =>
  `must be a count of hosts from ${least} to 100000 (e.g. 5) or a percentage of the selected hosts from "${least}%" to "100%" (a string, e.g. "10%")`;
const AMOUNT_LEAST: Array<[RegExp, 0 | 1]> = [
  [/^maxConcurrent$/, 1],
  [/^waves\[\d+\]\.size$/, 1],
  [/^maxFailures$/, 0],
];

/** Schema errors with an Amount field's reason replaced by its rule (fleet and pivot inputs). */
export function withAmountRules(errors: FieldError[]): FieldError[] {
  return errors.map((e) => {
    const least = AMOUNT_LEAST.find(([field]) => field.test(e.field))?.[1];
    return least === undefined ? e : { ...e, reason: amountRule(least) };
  });
}

function fieldsOf(schema: TSchema, value: unknown, prefix: string): FieldError[] {
  return withAmountRules(schemaErrors(schema, value, prefix).map((e) => (e.field === '(root)' ? { ...e, field: prefix || 'body' } : e)));
}

/** The operation checked against its own variant, so a reason names the field, not "no union member matched". */
function operationErrors(op: unknown): FieldError[] {
  if (typeof op !== 'object' || op === null || Array.isArray(op)) return [{ field: 'operation', reason: 'must be an object with a kind' }];
  const kind = (op as { kind?: unknown }).kind;
  if (typeof kind !== 'string' || !(kind in FLEET_OPERATIONS)) {
    return [{ field: 'operation.kind', reason: `must be one of ${FLEET_OPERATION_KINDS.join(', ')}` }];
  }
  const errors = fieldsOf(FLEET_OPERATIONS[kind as FleetOperationKind], op, 'operation');
  if (errors.length === 0 && kind === 'provision') {
    errors.push(...validateImage((op as { image: Static<typeof ImageSchema> }).image).map((e) => ({ ...e, field: e.field.replace(/^spec\.image/, 'operation.image') })));
  }
  if (errors.length === 0 && kind === 'clean') {
    // The same check as POST …/clean, so a fleet never asks a host for a clean it would refuse as invalid.
    const valid = validateCleanRequest({ steps: (op as { steps: unknown }).steps });
    if (!valid.ok) errors.push(...valid.errors.map((e) => ({ ...e, field: `operation.${e.field}` })));
  }
  if (kind === 'remediate') {
    // Named beside the schema's errors, as POST …/remediations names it.
    const strategy = (op as { strategy?: unknown }).strategy;
    const unpaired = strategyPairingError(typeof strategy === 'object' && strategy !== null ? (strategy as RemediationStrategy) : undefined);
    if (unpaired) errors.push({ field: 'operation.strategy.reinspect', reason: unpaired });
  }
  return errors;
}

function selectorErrors(selector: FleetSelector): FieldError[] {
  const errors: FieldError[] = [];
  const criteria = ['namespace', 'labelSelector', 'states', 'bmcTypes', 'hosts', 'sites'] as const;
  if (!criteria.some((c) => selector[c] !== undefined)) {
    errors.push({ field: 'selector', reason: `must give at least one of ${criteria.join(', ')} (a fleet operation never means "every host" by omission)` });
  }
  if (selector.labelSelector) errors.push(...validateLabelSelector(selector.labelSelector, 'selector.labelSelector'));
  (selector.hosts ?? []).forEach((ref, i) => {
    const valid = validateHostRef(ref);
    if (!valid.ok) errors.push(...valid.errors.map((e) => ({ ...e, field: `selector.hosts[${i}].${e.field.replace(/^metadata\./, '')}` })));
  });
  return errors;
}

/** Every field error of a fleet operation's input; the value typed when there is none. */
export function validateFleetInput(input: unknown): Result<FleetInput> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return { ok: false, errors: [{ field: 'body', reason: 'must be an object' }] };
  const { operation, ...rest } = input as Record<string, unknown>;
  const withoutOperation = Type.Omit(FleetInputSchema, ['operation']);
  const errors = [...fieldsOf(withoutOperation, rest, ''), ...(operation === undefined ? [{ field: 'operation', reason: 'is required' }] : operationErrors(operation))];
  const selector = rest.selector;
  // The selector's own rules are checked along with the rest when it is well formed, so one answer names every field.
  if (!errors.some((e) => e.field.startsWith('selector'))) errors.push(...selectorErrors(selector as FleetSelector));
  if (errors.length > 0) return { ok: false, errors };
  const value = input as FleetInput;
  if (value.maxConcurrent === 0) errors.push({ field: 'maxConcurrent', reason: 'must be at least 1 (or a percentage)' });
  if (value.maxConcurrent === '0%') errors.push({ field: 'maxConcurrent', reason: 'must be more than 0%' });
  (value.waves ?? []).forEach((w, i) => {
    if (w.size === 0 || w.size === '0%') errors.push({ field: `waves[${i}].size`, reason: 'must be at least 1 (or a percentage above 0%)' });
  });
  if (value.pauseAfterWave && !value.waves) errors.push({ field: 'pauseAfterWave', reason: 'needs waves (without them the whole selection is one wave)' });
  return errors.length > 0 ? { ok: false, errors } : { ok: true, value };
}

/**
 * `selector.sites` against the sites the operator configured (their names,
 * the default one included or not): the process that checks it reads
 * METALFLOW_SITES_FILE, which a workflow cannot, so this is apart from
 * validateFleetInput (the API checks it before starting the run, the
 * selection activity for a `temporal workflow start` input).
 */
export function fleetSiteErrors(selector: Pick<FleetSelector, 'sites'>, configured: readonly string[], operation?: FleetOperation): FieldError[] {
  const selected = (selector.sites ?? []).flatMap((site, i) => siteErrors(site, configured, `selector.sites[${i}]`));
  return operation?.kind === 'moveSite' ? [...selected, ...siteErrors(operation.site, configured, 'operation.site')] : selected;
}

/** The fleet needs each host's site: it selects by site or caps each site's hosts in flight. */
export const fleetUsesSites = (input: Pick<FleetInput, 'selector' | 'maxConcurrentPerSite'>): boolean =>
  input.selector.sites !== undefined || input.maxConcurrentPerSite !== undefined;

/**
 * The namespaces a fleet operation may touch, for permissions: the selector's
 * namespace, else those of its explicit hosts, else every namespace (`*`).
 */
export function fleetScope(input: Pick<FleetInput, 'selector'>): string[] {
  const { selector } = input;
  if (selector.namespace) return [selector.namespace];
  if (selector.hosts) return [...new Set(selector.hosts.map((h) => h.namespace))].sort();
  return ['*'];
}
