/**
 * A remediation's input: CAPM3's `Metal3Remediation` strategy (type Reboot,
 * retryLimit, timeoutSeconds) plus how the Node is handled. One TypeBox
 * schema serves the API's body and the workflow's own check of its input,
 * so a bad value names its field wherever it comes from.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { Result } from './field-error';
import { schemaErrors } from './validate';

const closed = { additionalProperties: false } as const;

/** CAPM3's defaults (Metal3RemediationTemplate): one reboot, 600 s for the Node to come back. */
export const REMEDIATION_DEFAULTS = { retryLimit: 1, timeoutSeconds: 600 } as const;
/** retryLimit has no upper bound in CAPM3; here it bounds the workflow's history (about 40 events per attempt). */
export const MAX_RETRY_LIMIT = 100;
/** How long the opt-in steps beyond Metal3 may take by default: a deprovision and a provision; an inspection. */
export const REPROVISION_DEFAULT_SECONDS = 3600;
export const REINSPECT_DEFAULT_SECONDS = 1800;

/** An opt-in step beyond Metal3's reboots: present (even `{}`) turns it on. */
const optInStep = (what: string, min: number, def: number) =>
  Type.Optional(
    Type.Object(
      { timeoutSeconds: Type.Optional(Type.Integer({ minimum: min, maximum: 86_400, description: `How long the step may take (default ${def})` })) },
      { ...closed, description: what },
    ),
  );

/**
 * What happens to the Node once the host is surely off: the out-of-service taint
 * (Kubernetes ≥ 1.28 moves its workloads and detaches volumes, the Node stays) or
 * CAPM3's older way, the Node's labels and annotations backed up and the Node deleted.
 */
export const NODE_HANDLING = ['OutOfServiceTaint', 'Delete'] as const;
export type NodeHandling = (typeof NODE_HANDLING)[number];

export const RemediationStrategySchema = Type.Object(
  {
    type: Type.Literal('Reboot', { description: 'Reboot (the only strategy, as in CAPM3)' }),
    retryLimit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_RETRY_LIMIT, description: 'Power cycles before giving up (default 1)' })),
    timeoutSeconds: Type.Optional(
      Type.Integer({ minimum: 100, maximum: 86_400, description: 'How long each power cycle waits for the Node to come back (default 600)' }),
    ),
    reprovision: optInStep(
      'Beyond Metal3, opt-in: after the reboots failed, re-provision the same image and userData through the host workflow (deprovision, provision), then wait for the Node as after a reboot',
      300,
      REPROVISION_DEFAULT_SECONDS,
    ),
    reinspect: optInStep(
      'Beyond Metal3, opt-in (needs reprovision): if re-provisioning failed too, deprovision and re-inspect the host and name what changed against the hardware recorded before in the failure',
      300,
      REINSPECT_DEFAULT_SECONDS,
    ),
  },
  closed,
);
export type RemediationStrategy = Static<typeof RemediationStrategySchema>;

export const RemediationInputSchema = Type.Object(
  {
    strategy: RemediationStrategySchema,
    nodeHandling: Type.Optional(
      Type.Union(
        NODE_HANDLING.map((h) => Type.Literal(h)),
        { description: 'Kubernetes mode: OutOfServiceTaint (default) or Delete (back up labels and annotations, delete the Node)' },
      ),
    ),
    nodeName: Type.Optional(
      Type.String({ minLength: 1, maxLength: 253, description: 'The host\'s Node; default: the Node labelled metal3.io/uuid=<the host\'s uid>' }),
    ),
  },
  closed,
);
export type RemediationRequest = Static<typeof RemediationInputSchema>;

/** The request with its field errors named (`strategy.timeoutSeconds: must be >= 100`). */
export function validateRemediationRequest(input: unknown): Result<RemediationRequest> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return { ok: false, errors: [{ field: 'body', reason: 'must be an object' }] };
  const errors = schemaErrors(RemediationInputSchema, input, '').map((e) => (e.field === '(root)' ? { ...e, field: 'body' } : e));
  const strategy = (input as { strategy?: unknown }).strategy;
  const unpaired = strategyPairingError(typeof strategy === 'object' && strategy !== null ? (strategy as RemediationStrategy) : undefined);
  if (unpaired) errors.push({ field: 'strategy.reinspect', reason: unpaired });
  return errors.length > 0 ? { ok: false, errors } : { ok: true, value: input as RemediationRequest };
}

/** Re-inspection follows a failed re-provision (the host's image is gone by then): alone it is refused. */
export function strategyPairingError(strategy: Partial<RemediationStrategy> | undefined): string | undefined {
  return strategy?.reinspect !== undefined && strategy.reprovision === undefined
    ? 'needs strategy.reprovision: re-inspection runs only after a failed re-provision (set reprovision: {} too)'
    : undefined;
}

/** Typed failures of a remediation's activities, for the workflow to branch on. */
export const REMEDIATION_FAILURE = {
  /** The host (its workflow or its BareMetalHost) is gone. */
  hostGone: 'RemediationHostGone',
  /** The host workflow refused the power-off request (e.g. spec.disablePowerOff). */
  powerRefused: 'RemediationPowerRefused',
  /** Node handling asked of a worker without a Kubernetes API server. */
  noKubernetes: 'RemediationNoKubernetes',
} as const;
