/** Request schemas of the HTTP API, built from the host model's schemas. */
import { CLEAN_STEP_NAMES } from '../model/clean';
import { Type, type Static } from '@sinclair/typebox';
import { HostSpecSchema, HostStatusSchema, ImageSchema, MAX_LENGTH, PROVISIONING_STATES } from '../model/host';
import { LabelsSchema } from '../model/labels';

/** What the API takes inline and stores as Secrets; the whole body is limited too (server.ts). */
export const INLINE_MAX_LENGTH = {
  username: 255,
  password: 1024,
  /** Cloud-init, Ignition: half of the 1 MiB a Kubernetes Secret may hold. */
  userData: 512 * 1024,
  networkData: 64 * 1024,
  metaData: 64 * 1024,
} as const;

const hostParams = {
  namespace: Type.String({ maxLength: MAX_LENGTH.label, description: 'Host namespace (DNS-1123 label)' }),
  name: Type.String({ maxLength: MAX_LENGTH.name, description: 'Host name (DNS-1123 subdomain)' }),
};

export const HostParamsSchema = Type.Object(hostParams);

export const HostInputSchema = Type.Object(
  {
    metadata: Type.Optional(
      Type.Object(
        { labels: Type.Optional(LabelsSchema) },
        { additionalProperties: false, description: 'metadata.labels replaces the host\'s labels (fleet operations select by them); without it the labels stay as they are' },
      ),
    ),
    spec: HostSpecSchema,
    credentials: Type.Optional(
      Type.Object(
        {
          username: Type.String({ minLength: 1, maxLength: INLINE_MAX_LENGTH.username }),
          password: Type.String({ minLength: 1, maxLength: INLINE_MAX_LENGTH.password, writeOnly: true }),
        },
        {
          additionalProperties: false,
          description: 'BMC credentials, stored encrypted as the Secret spec.bmc.credentialsName; never returned. Refused for a host of a site that holds its BMC credentials itself ("secrets": "site", docs/sites.md)',
        },
      ),
    ),
    userData: Type.Optional(
      Type.String({
        maxLength: INLINE_MAX_LENGTH.userData,
        writeOnly: true,
        description: 'Cloud-init user data (any format cloud-init or Ignition reads; #cloud-config must be YAML, a JSON document must parse), stored as a Secret (spec.userData or <name>-user-data)',
      }),
    ),
    networkData: Type.Optional(
      Type.String({ maxLength: INLINE_MAX_LENGTH.networkData, writeOnly: true, description: 'Network data: a JSON or YAML mapping (OpenStack network_data), stored as a Secret' }),
    ),
    metaData: Type.Optional(
      Type.String({ maxLength: INLINE_MAX_LENGTH.metaData, writeOnly: true, description: 'Extra meta data: a JSON or YAML mapping, stored as a Secret' }),
    ),
    status: Type.Optional({
      ...HostStatusSchema,
      description:
        "A status to start from, as Metal3's baremetalhost.metal3.io/status (a host moved from another plane, detached there first): only when the host is created; it registers and a provisioned host is adopted as it is, never inspected or deployed",
    }),
  },
  { additionalProperties: false },
);

/** `PUT …/detached`: Metal3's detached annotation arguments. */
export const DetachBodySchema = Type.Object(
  {
    deleteAction: Type.Optional(Type.Union([Type.Literal('delete'), Type.Literal('delay')], { description: 'delete (default): the Ironic node is deleted as it is; delay: kept until the host is deleted' })),
    force: Type.Optional(Type.Boolean({ description: 'Detach in any state (default: only at rest)' })),
  },
  { additionalProperties: false, 'x-optional': true },
);

export const ListQuerySchema = Type.Object(
  {
    namespace: Type.Optional(Type.String({ maxLength: MAX_LENGTH.label, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$' })),
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

/** A reboot's optional idempotency key: a request sent again with the same key is the same reboot. */
export const RebootHeadersSchema = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      pattern: '^[\\x21-\\x7e]+$',
      description:
        'Optional. 1-255 visible ASCII characters, no spaces. A POST sent again with the same key (e.g. after a timeout or a dropped ' +
        'connection) does not reboot again: it answers for the first. The host remembers its last 32 keys.',
    }),
  ),
});

/** Why the host is paused, shown in its view (`paused.reason`); the body may be left out. */
export const PauseBodySchema = Type.Object(
  { reason: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'Who paused the host and why (at most 256 characters)' })) },
  { additionalProperties: false, 'x-optional': true },
);

export const PowerOffParamsSchema = Type.Object({
  ...hostParams,
  key: Type.String({
    maxLength: 63,
    pattern: '^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$',
    description: 'Who asks (as in reboot.metal3.io/<key>): 1-63 letters, digits, "-", "_", "."',
  }),
});

/**
 * `POST …/clean`, for the API description; checked by validateCleanRequest (model/clean.ts,
 * `x-validator`), so each field error names its field and lists what is accepted.
 */
/** `PUT …/raid`: Metal3's spec.raid as it is (host-settings.ts checks it field by field), or null. */
export const RaidBodySchema = Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()], {
  description: "Metal3's spec.raid: {hardwareRAIDVolumes: [...]} or {softwareRAIDVolumes: [...]}; null clears it",
});

export const CleanBodySchema = Type.Object(
  {
    steps: Type.Array(
      Type.Object(
        {
          name: Type.Union(CLEAN_STEP_NAMES.map((n) => Type.Literal(n))),
          raid: Type.Optional(Type.Object({}, { additionalProperties: true, description: "Metal3's spec.raid: hardwareRAIDVolumes or softwareRAIDVolumes" })),
          firmware: Type.Optional(Type.Object({}, { additionalProperties: true, description: "Metal3's spec.firmware flags" })),
          settings: Type.Optional(Type.Record(Type.String(), Type.String(), { description: 'BIOS attributes by name' })),
          updates: Type.Optional(
            Type.Array(Type.Object({ component: Type.String(), url: Type.String() }, { additionalProperties: true }), {
              description: 'firmware step: images to flash, {component: bios|bmc, url: http(s)}',
            }),
          ),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: 8 },
    ),
  },
  { additionalProperties: false, 'x-validator': 'clean-request' },
);

