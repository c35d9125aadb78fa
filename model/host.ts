/**
 * The BareMetalHost model, field-compatible with Metal3's `metal3.io/v1alpha1`.
 *
 * These TypeBox schemas are the single source: the TypeScript types below are
 * derived from them, the HTTP API validates requests with them, and the CRD's
 * openAPIV3Schema is generated from them. Anything the schema cannot express
 * (BMC address grammar, checksum length per algorithm, cross-field rules) lives
 * in `validate.ts`.
 */
import { Type, type Static, type TLiteral, type TUnion } from '@sinclair/typebox';
import { HardwareDetailsSchema } from './host-hardware';
import { HostDhcpSchema, HostDhcpStatusSchema } from './host-dhcp';
import { MAX_LENGTH, open, passThrough, str } from './schema-parts';

// Re-exported: most of the code base imports them from here.
export { HardwareDetailsSchema } from './host-hardware';
export { MAX_LENGTH } from './schema-parts';

export const BOOT_MODES = ['UEFI', 'UEFISecureBoot', 'legacy'] as const;
export const CLEANING_MODES = ['metadata', 'disabled'] as const;
export const CHECKSUM_TYPES = ['md5', 'sha256', 'sha512', 'auto'] as const;
export const IMAGE_FORMATS = ['raw', 'qcow2', 'vdi', 'vmdk', 'live-iso'] as const;
/** Metal3's `agent` (boot the inspection ramdisk) and `disabled`, plus metalflow's `fast` (read the BMC's inventory out of band). */
export const INSPECTION_MODES = ['agent', 'disabled', 'fast'] as const;
/** Who does the work: Ironic (default), or metalflow speaking to the BMC itself (Redfish virtual media, IPMI power). */
export const PROVISIONERS = ['ironic', 'direct'] as const;

type Literals<T extends readonly string[]> = { -readonly [K in keyof T]: TLiteral<T[K]> };

function literalUnion<T extends readonly string[]>(values: T, description: string): TUnion<Literals<T>> {
  return Type.Union(
    values.map((v) => Type.Literal(v)),
    { description },
  ) as unknown as TUnion<Literals<T>>;
}

export const SecretReferenceSchema = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 253, description: 'Name of the Secret' }),
    namespace: Type.Optional(
      Type.String({ maxLength: 63, description: "Namespace of the Secret; must be the host's namespace" }),
    ),
  },
  open,
);

export const BmcDetailsSchema = Type.Object(
  {
    // Empty (both fields) is how Go clients serialise a host without a BMC: unmanaged (validate.ts).
    address: Type.String({
      maxLength: 2048,
      description: 'How to reach the BMC, e.g. ipmi://10.0.0.5 or redfish://bmc.example/redfish/v1/Systems/1',
    }),
    credentialsName: Type.String({
      maxLength: 253,
      description: 'Secret in the host namespace holding `username` and `password`',
    }),
    disableCertificateVerification: Type.Optional(Type.Boolean()),
  },
  open,
);

export const ImageSchema = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: 4096, description: 'http(s) URL of the image to write' }),
    checksum: Type.Optional(
      Type.String({ maxLength: 4096, description: 'Hex digest of the image, or http(s) URL of a checksum file' }),
    ),
    checksumType: Type.Optional(literalUnion(CHECKSUM_TYPES, 'Digest algorithm; auto infers it from the length')),
    format: Type.Optional(literalUnion(IMAGE_FORMATS, 'Disk format of the image')),
    ociAuthSecretName: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 253,
        description: 'Docker-config Secret in the host namespace with registry credentials for oci:// images',
      }),
    ),
  },
  open,
);

/** status.provisioning.image: Metal3 writes `{"url": ""}` on every host that runs no image (no image, as its Go code reads it). */
export const StatusImageSchema = Type.Object(
  {
    ...ImageSchema.properties,
    url: Type.String({ maxLength: 4096, description: 'URL of the image the host runs; empty (as Metal3 writes it): none' }),
  },
  open,
);

export const RootDeviceHintsSchema = Type.Object(
  {
    deviceName: Type.Optional(str(MAX_LENGTH.path, { minLength: 1 })),
    hctl: Type.Optional(str(MAX_LENGTH.word, { minLength: 1 })),
    model: Type.Optional(str(MAX_LENGTH.text, { minLength: 1 })),
    vendor: Type.Optional(str(MAX_LENGTH.text, { minLength: 1 })),
    serialNumber: Type.Optional(str(MAX_LENGTH.text, { minLength: 1 })),
    minSizeGigabytes: Type.Optional(Type.Integer({ minimum: 0 })),
    wwn: Type.Optional(str(MAX_LENGTH.text, { minLength: 1 })),
    wwnWithExtension: Type.Optional(str(MAX_LENGTH.text, { minLength: 1 })),
    wwnVendorExtension: Type.Optional(str(MAX_LENGTH.text, { minLength: 1 })),
    rotational: Type.Optional(Type.Boolean()),
  },
  open,
);

export const ObjectReferenceSchema = Type.Object(
  {
    apiVersion: Type.Optional(str(MAX_LENGTH.apiVersion)),
    kind: Type.Optional(str(MAX_LENGTH.label)),
    name: Type.Optional(str(MAX_LENGTH.name)),
    namespace: Type.Optional(str(MAX_LENGTH.label)),
    uid: Type.Optional(str(MAX_LENGTH.id)),
    resourceVersion: Type.Optional(str(MAX_LENGTH.id)),
    fieldPath: Type.Optional(str(MAX_LENGTH.path)),
  },
  open,
);


/**
 * spec.raid / spec.firmware: any shape here (so a Metal3 manifest still fits the CRD), null as Go
 * clients may send it; host-settings.ts checks them field by field as the clean steps are checked.
 */
const settingsObject = (description: string) => Type.Union([passThrough, Type.Null()], { description });

/** A list Metal3 defines and metalflow accepts (so a Metal3 manifest applies unchanged) without acting on it. */
const deprecatedList = (description: string) => Type.Union([Type.Array(passThrough, { maxItems: 256 }), Type.Null()], { description });

export const HostSpecSchema = Type.Object(
  {
    /** Optional as in Metal3: a host without a BMC is `unmanaged` and does nothing until one is given. */
    bmc: Type.Optional(BmcDetailsSchema),
    bootMACAddress: Type.Optional(Type.String({ maxLength: 17 })),
    bootMode: Type.Optional(literalUnion(BOOT_MODES, 'Boot mode; UEFI when unset')),
    online: Type.Boolean({ description: 'Whether the host should be powered on' }),
    image: Type.Optional(ImageSchema),
    userData: Type.Optional(SecretReferenceSchema),
    networkData: Type.Optional(SecretReferenceSchema),
    metaData: Type.Optional(SecretReferenceSchema),
    rootDeviceHints: Type.Optional(RootDeviceHintsSchema),
    automatedCleaningMode: Type.Optional(literalUnion(CLEANING_MODES, 'metadata (clean) when unset')),
    externallyProvisioned: Type.Optional(Type.Boolean()),
    inspectionMode: Type.Optional(literalUnion(INSPECTION_MODES, 'How to inspect: agent when unset')),
    disablePowerOff: Type.Optional(
      Type.Boolean({ description: 'Never power the host off (reboots only); online must then stay true' }),
    ),
    provisioner: Type.Optional(
      literalUnion(PROVISIONERS, 'metalflow extension: ironic (default) or direct (no Ironic; needs a Redfish or IPMI BMC)'),
    ),
    consumerRef: Type.Optional(ObjectReferenceSchema),
    description: Type.Optional(str(MAX_LENGTH.description)),
    architecture: Type.Optional(str(MAX_LENGTH.word)),
    hardwareProfile: Type.Optional(str(MAX_LENGTH.word)),
    preprovisioningNetworkDataName: Type.Optional(str(MAX_LENGTH.name)),
    customDeploy: Type.Optional(
      Type.Union([Type.Object({ method: Type.Optional(str(MAX_LENGTH.text, { description: 'Ironic deploy step the agent runs, e.g. install_coreos' })) }, open), Type.Null()], {
        description: "Metal3's custom deploy: provision with Ironic's custom-agent deploy interface running this step (an empty method asks for nothing)",
      }),
    ),
    firmware: Type.Optional(settingsObject("Metal3's firmware flags (simultaneousMultithreadingEnabled, sriovEnabled, virtualizationEnabled): applied as Ironic's bios clean step while preparing")),
    raid: Type.Optional(settingsObject("Metal3's RAID volumes (hardwareRAIDVolumes or softwareRAIDVolumes): applied as Ironic's raid clean steps while preparing")),
    taints: Type.Optional(deprecatedList('Deprecated in Metal3 and never implemented there: accepted and ignored')),
    networkInterfaces: Type.Optional(deprecatedList('Metal3 switch-port configuration: accepted and ignored by metalflow')),
    dhcp: Type.Optional(HostDhcpSchema),
    site: Type.Optional(
      Type.String({ minLength: 1, maxLength: 63, description: 'metalflow extension: the site whose Ironic, DHCP and image cache serve the host (docs/sites.md); the default site when unset' }),
    ),
  },
  open,
);

export const PROVISIONING_STATES = [
  '',
  'unmanaged',
  'registering',
  'inspecting',
  'preparing',
  'available',
  'provisioning',
  'provisioned',
  'externally provisioned',
  'deprovisioning',
  'powering off before delete',
  'deleting',
  // Metal3's legacy states (last: the recorded decision tables sample states by position): only in a status
  // restored from Metal3; decide() moves on to preparing / available.
  'match profile',
  'ready',
] as const;
/** Metal3's values; metalflow sets OK, error, delayed (provisioning limit) and detached, the others come with a status restored from Metal3. */
export const OPERATIONAL_STATUSES = ['', 'OK', 'discovered', 'error', 'delayed', 'detached', 'servicing'] as const;
export const ERROR_TYPES = [
  '',
  'registration error',
  'inspection error',
  'preparation error',
  'provisioning error',
  'power management error',
  'provisioned registration error',
  'detach error',
  'servicing error',
] as const;

const OperationMetricSchema = Type.Object(
  { start: Type.Optional(str(MAX_LENGTH.id)), end: Type.Optional(str(MAX_LENGTH.id)) },
  open,
);

export const ProvisionStatusSchema = Type.Object(
  {
    state: literalUnion(PROVISIONING_STATES, 'Provisioning state, as Metal3 names it'),
    ID: str(MAX_LENGTH.id, { description: 'Ironic node UUID' }),
    image: Type.Optional(StatusImageSchema),
    bootMode: Type.Optional(literalUnion(BOOT_MODES, 'Boot mode in use')),
    rootDeviceHints: Type.Optional(RootDeviceHintsSchema),
    // Metal3 records these; kept so a status copied from Metal3 restores as it is.
    raid: Type.Optional(passThrough),
    firmware: Type.Optional(passThrough),
    customDeploy: Type.Optional(passThrough),
  },
  open,
);

/** Metal3's CredentialsStatus: which Secret (and which version of it) was tried, or last worked. */
export const CredentialsStatusSchema = Type.Object(
  {
    credentials: Type.Optional(SecretReferenceSchema),
    credentialsVersion: Type.Optional(str(MAX_LENGTH.id, { description: 'resourceVersion of the Secret' })),
  },
  open,
);

export const HostStatusSchema = Type.Object(
  {
    operationalStatus: literalUnion(OPERATIONAL_STATUSES, 'Health of the host as a whole'),
    errorType: Type.Optional(literalUnion(ERROR_TYPES, 'Which kind of operation last failed')),
    errorMessage: str(MAX_LENGTH.message),
    errorCount: Type.Integer({ minimum: 0 }),
    poweredOn: Type.Boolean(),
    hardware: Type.Optional(HardwareDetailsSchema),
    hardwareProfile: Type.Optional(str(MAX_LENGTH.word, { description: 'Deprecated in Metal3; kept for compatibility' })),
    goodCredentials: Type.Optional(CredentialsStatusSchema),
    triedCredentials: Type.Optional(CredentialsStatusSchema),
    operationHistory: Type.Object(
      {
        register: OperationMetricSchema,
        inspect: OperationMetricSchema,
        provision: OperationMetricSchema,
        deprovision: OperationMetricSchema,
      },
      open,
    ),
    provisioning: ProvisionStatusSchema,
    lastUpdated: Type.Optional(str(MAX_LENGTH.id)),
    // Metal3's, stored as given (a status restored from Metal3 carries them).
    provisioningFailCount: Type.Optional(Type.Integer({ minimum: 0 })),
    lastAttemptedImage: Type.Optional(passThrough),
    conditions: Type.Optional(Type.Array(passThrough)),
    /** metalflow's: the DHCP reservation (spec.dhcp) and its lease. */
    dhcp: Type.Optional(HostDhcpStatusSchema),
  },
  open,
);

export type SecretReference = Static<typeof SecretReferenceSchema>;
export type BmcDetails = Static<typeof BmcDetailsSchema>;
export type Image = Static<typeof ImageSchema>;
export type RootDeviceHints = Static<typeof RootDeviceHintsSchema>;
export type HostSpec = Static<typeof HostSpecSchema>;
export type HardwareDetails = Static<typeof HardwareDetailsSchema>;
export type HostStatus = Static<typeof HostStatusSchema>;
export type CredentialsStatus = Static<typeof CredentialsStatusSchema>;
export type ProvisioningState = (typeof PROVISIONING_STATES)[number];
export type OperationalStatus = (typeof OPERATIONAL_STATUSES)[number];
export type ErrorType = (typeof ERROR_TYPES)[number];
export type BootMode = (typeof BOOT_MODES)[number];
export type InspectionMode = (typeof INSPECTION_MODES)[number];
export type Provisioner = (typeof PROVISIONERS)[number];
export type OperationName = keyof HostStatus['operationHistory'];

/** Identifies a host the way Kubernetes does: namespace plus name. */
export interface HostRef {
  namespace: string;
  name: string;
}

/** The spec's BMC, for the steps that need one (decide() never starts them for a host without). */
export function bmcOf(spec: HostSpec): BmcDetails {
  if (!spec.bmc) throw new Error('the host has no BMC (spec.bmc is not set)');
  return spec.bmc;
}

export function emptyStatus(): HostStatus {
  return {
    operationalStatus: 'OK',
    errorType: '',
    errorMessage: '',
    errorCount: 0,
    poweredOn: false,
    operationHistory: { register: {}, inspect: {}, provision: {}, deprovision: {} },
    provisioning: { state: '', ID: '' },
  };
}
