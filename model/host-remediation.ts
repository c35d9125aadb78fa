/**
 * `HostRemediation` (group metalflow.io, v1alpha1): a remediation asked for
 * in Kubernetes mode, naming a BareMetalHost of its namespace, with the same
 * strategy fields as CAPM3's `Metal3Remediation`. Its CRD is generated from
 * these schemas (k8s/generate-crds.ts); the status is the remediation
 * workflow's, written back as it goes.
 */
import { Type, type Static } from '@sinclair/typebox';
import { RemediationInputSchema } from './remediation';

export const HOST_REMEDIATION = { group: 'metalflow.io', version: 'v1alpha1', plural: 'hostremediations', kind: 'HostRemediation' } as const;

const closed = { additionalProperties: false } as const;

export const HostRemediationSpecSchema = Type.Object(
  {
    hostName: Type.String({ minLength: 1, maxLength: 253, description: 'The BareMetalHost to remediate, in this namespace' }),
    ...RemediationInputSchema.properties,
  },
  { ...closed, description: 'Which host, and CAPM3\'s reboot strategy' },
);
export type HostRemediationSpec = Static<typeof HostRemediationSpecSchema>;

export const HostRemediationStatusSchema = Type.Object(
  {
    phase: Type.Optional(
      Type.Union(['Running', 'Waiting', 'Deleting machine', 'Failed'].map((p) => Type.Literal(p)), { description: 'CAPM3\'s phases' }),
    ),
    retryCount: Type.Optional(Type.Integer({ minimum: 0, description: 'Power cycles asked for so far' })),
    lastRemediated: Type.Optional(Type.String({ maxLength: 64, description: 'When the last power cycle was asked for (RFC 3339)' })),
    outcome: Type.Optional(
      Type.Union(['queued', 'running', 'succeeded', 'failed', 'refused', 'cancelled'].map((o) => Type.Literal(o)), {
        description: 'queued: another remediation of the host runs first (message names it); refused: nothing was changed',
      }),
    ),
    message: Type.Optional(Type.String({ maxLength: 4096, description: 'The last step or the reason it ended' })),
    workflowId: Type.Optional(Type.String({ maxLength: 1024, description: 'The Temporal workflow running it' })),
  },
  { ...closed, description: 'Written by metalflow\'s remediation workflow' },
);
export type HostRemediationStatus = Static<typeof HostRemediationStatusSchema>;
