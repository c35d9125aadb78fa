/** Request schemas of the HTTP API, built from the host model's schemas. */
import { Type, type Static } from '@sinclair/typebox';
import { HostSpecSchema, ImageSchema, PROVISIONING_STATES } from '../types/host';

export const HostParamsSchema = Type.Object({
  namespace: Type.String({ description: 'Host namespace (DNS-1123 label)' }),
  name: Type.String({ description: 'Host name (DNS-1123 subdomain)' }),
});

export const HostInputSchema = Type.Object(
  {
    spec: HostSpecSchema,
    credentials: Type.Optional(
      Type.Object(
        {
          username: Type.String({ minLength: 1 }),
          password: Type.String({ minLength: 1, writeOnly: true }),
        },
        {
          additionalProperties: false,
          description: 'BMC credentials, stored encrypted as the Secret spec.bmc.credentialsName; never returned',
        },
      ),
    ),
    userData: Type.Optional(
      Type.String({ writeOnly: true, description: 'Cloud-init user data, stored as a Secret (spec.userData or <name>-user-data)' }),
    ),
    networkData: Type.Optional(Type.String({ writeOnly: true, description: 'Network data (JSON), stored as a Secret' })),
    metaData: Type.Optional(Type.String({ writeOnly: true, description: 'Extra meta data (JSON), stored as a Secret' })),
  },
  { additionalProperties: false },
);

export const ListQuerySchema = Type.Object(
  {
    namespace: Type.Optional(Type.String({ pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$' })),
    state: Type.Optional(
      Type.Union(
        PROVISIONING_STATES.filter((s) => s !== '').map((s) => Type.Literal(s)),
        { description: 'Only hosts in this provisioning state' },
      ),
    ),
  },
  { additionalProperties: false },
);

export const ImageBodySchema = ImageSchema;

export type HostInputBody = Static<typeof HostInputSchema>;

/** A one-shot reboot or a keyed power-off request: soft (shut down, hard if that fails) or hard. */
export const RebootBodySchema = Type.Object(
  {
    mode: Type.Optional(
      Type.Union([Type.Literal('soft'), Type.Literal('hard')], {
        description: 'soft (default): ask the OS to shut down, hard if it has not within the timeout; hard: cut power at once',
      }),
    ),
  },
  // The body may be left out entirely (server.ts's validator honours x-optional).
  { additionalProperties: false, 'x-optional': true },
);

/** Why the host is paused, shown in its view (`paused.reason`); the body may be left out. */
export const PauseBodySchema = Type.Object(
  { reason: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'Who paused the host and why (at most 256 characters)' })) },
  { additionalProperties: false, 'x-optional': true },
);

export const PowerOffParamsSchema = Type.Object({
  namespace: Type.String({ description: 'Host namespace (DNS-1123 label)' }),
  name: Type.String({ description: 'Host name (DNS-1123 subdomain)' }),
  key: Type.String({
    pattern: '^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$',
    description: 'Who asks (as in reboot.metal3.io/<key>): 1-63 letters, digits, "-", "_", "."',
  }),
});
