/**
 * A pivot's input: which hosts move, from which management plane to which,
 * how many at once and how many may fail. One TypeBox schema serves the API's
 * body and the workflow's own check of a `temporal workflow start` input.
 * A plane is named by the id the operator registered it under in the worker's
 * and the API's configuration (config/pivot-planes.ts): a caller never says
 * which file or Secret the worker reads, nor where it sends what it read.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { FieldError, Result } from './field-error';
import { FleetInputSchema, FleetSelectorSchema, withAmountRules } from './fleet';
import { schemaErrors } from './validate';

const closed = { additionalProperties: false } as const;
const DNS_LABEL = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';
/** The pivot's pause value `metalflow.io/pivot-<name>` fits Metal3's annotation limits comfortably. */
export const MAX_PIVOT_NAME = 57;

/** A key of a Secret the worker running the pivot reads. */
const secretKeyRef = (keyDescription: string) =>
  Type.Object(
    {
      namespace: Type.String({ minLength: 1, maxLength: 63, pattern: DNS_LABEL }),
      name: Type.String({ minLength: 1, maxLength: 253 }),
      key: Type.Optional(Type.String({ minLength: 1, maxLength: 253, description: keyDescription })),
    },
    closed,
  );

/** A plane that is a metalflow HTTP API: its URL and where its token is (a file or a Secret the worker reads), never the token. */
export const ApiPlaneSchema = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: 2048, pattern: '^https?://[^\\s]+$', description: "The plane's metalflow API, e.g. https://mgmt.example:8080" }),
    tokenFile: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, description: 'Path of a file holding the bearer token, as the worker running the pivot sees it' })),
    tokenSecret: Type.Optional(secretKeyRef('The key holding the token (default "token")')),
  },
  { ...closed, description: "An API-mode plane: the token is read by the pivot's activities from the file or from the worker's secret store" },
);
export type ApiPlane = Static<typeof ApiPlaneSchema>;

/**
 * How planes were once named in a pivot's input (paths and Secrets). The input check refuses these
 * fields now; the activities' plane resolution still types them (activities/pivot/planes.ts).
 */
export const LegacyPlaneSchema = Type.Object(
  {
    api: Type.Optional(ApiPlaneSchema),
    kubeconfig: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, description: "Path of the plane's kubeconfig file, as the worker running the pivot sees it" })),
    kubeconfigSecret: Type.Optional(secretKeyRef('The key holding the kubeconfig (default "value", as Cluster API names it)')),
    taskQueue: Type.Optional(Type.String({ minLength: 1, maxLength: 1000, description: "The task queue of the plane's metalflow worker" })),
    temporalNamespace: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: "The Temporal namespace the plane's host workflows live in (default: the pivot's own)" })),
  },
  { ...closed, description: 'A management plane: its Kubernetes API server (kubeconfig file or Secret; none: the worker\'s own) and the worker that serves it' },
);
export type LegacyPlane = Static<typeof LegacyPlaneSchema>;

/** A plane as a pivot names it: a registered plane's id, or nothing for the worker's own cluster and Temporal namespace. */
export const PlaneSchema = Type.Object(
  {
    plane: Type.Optional(Type.String({ minLength: 1, maxLength: 63, pattern: DNS_LABEL, description: 'The id of a plane the operator registered (METALFLOW_PIVOT_PLANES); none: the worker\'s own cluster' })),
  },
  { ...closed, description: 'A management plane, by the id the operator registered it under' },
);
/** A plane as the workflow and activities receive it: by id, or (runs started before ids) the legacy fields. */
export type Plane = Static<typeof PlaneSchema> & Partial<LegacyPlane>;

const { maxConcurrent, maxFailures, hostTimeoutSeconds, dryRun } = FleetInputSchema.properties;

/** The selector of fleet operations, without the criteria a pivot does not read (BMC types, sites). */
export const PivotSelectorSchema = Type.Omit(FleetSelectorSchema, ['bmcTypes', 'sites']);
export type PivotSelector = Static<typeof PivotSelectorSchema>;

const pivotFields = {
  name: Type.String({ minLength: 1, maxLength: MAX_PIVOT_NAME, pattern: DNS_LABEL, description: 'The pivot; its workflow id is pivot/<name>' }),
  selector: PivotSelectorSchema,
  maxConcurrent,
  maxFailures,
  hostTimeoutSeconds,
  dryRun: Type.Optional({ ...dryRun, description: 'Run only the pre-checks and report each host' }),
};
export const PivotInputSchema = Type.Object({ ...pivotFields, source: PlaneSchema, target: PlaneSchema }, closed);
export type PivotInput = Omit<Static<typeof PivotInputSchema>, 'source' | 'target'> & { source: Plane; target: Plane };

/** Every field error of a pivot's input; the value typed when there is none. */
export function validatePivotInput(input: unknown): Result<PivotInput> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return { ok: false, errors: [{ field: 'body', reason: 'must be an object' }] };
  return validateById(input);
}

const LEGACY_FIELDS = ['kubeconfig', 'kubeconfigSecret', 'api', 'taskQueue', 'temporalNamespace'] as const;

function validateById(input: object): Result<PivotInput> {
  const errors: FieldError[] = [];
  // Said plainly: a caller used to name files and Secrets here, and the generic "unknown field" would not say why it went.
  for (const side of ['source', 'target'] as const) {
    const plane = (input as Record<string, unknown>)[side];
    if (typeof plane !== 'object' || plane === null) continue;
    for (const f of LEGACY_FIELDS) {
      if (f in plane) errors.push({ field: `${side}.${f}`, reason: 'is not accepted: name a plane the operator registered (METALFLOW_PIVOT_PLANES) by its id, as {"plane": "<id>"}' });
    }
  }
  if (errors.length > 0) return { ok: false, errors };
  errors.push(...withAmountRules(schemaErrors(PivotInputSchema, input, '').map((e) => (e.field === '(root)' ? { ...e, field: 'body' } : e))));
  if (errors.length > 0) return { ok: false, errors };
  const value = input as PivotInput;
  if (!value.target.plane) errors.push({ field: 'target.plane', reason: "is required: the id of a registered plane (the target is another plane than the worker's own)" });
  else if (value.target.plane === value.source.plane) errors.push({ field: 'target.plane', reason: "is the source's plane: a pivot moves hosts to another plane" });
  const criteria = ['namespace', 'labelSelector', 'states', 'hosts'] as const;
  if (!criteria.some((c) => value.selector[c] !== undefined)) {
    errors.push({ field: 'selector', reason: `must give at least one of ${criteria.join(', ')} (a pivot never means "every host" by omission)` });
  }
  if (value.maxConcurrent === 0 || value.maxConcurrent === '0%') errors.push({ field: 'maxConcurrent', reason: 'must be at least 1 (or a percentage above 0%)' });
  return errors.length > 0 ? { ok: false, errors } : { ok: true, value };
}

/** The pause value a pivot puts on the hosts it freezes: a user's own pause is another value, and is kept. */
export const pivotPauseValue = (pivot: string): string => `metalflow.io/pivot-${pivot}`;
/** Marks what a pivot created in the target (and nothing else is ever deleted by its rollback). */
export const PIVOT_ANNOTATION = 'metalflow.io/pivot';

/** The namespaces a pivot may touch, for permissions: the selector's namespace, else those of its hosts, else every namespace. */
export function pivotScope(input: Pick<PivotInput, 'selector'>): string[] {
  if (input.selector.namespace) return [input.selector.namespace];
  if (input.selector.hosts) return [...new Set(input.selector.hosts.map((h) => h.namespace))].sort();
  return ['*'];
}
