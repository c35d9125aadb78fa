/**
 * The BMC types metalflow knows and what each means for Ironic: hardware type,
 * interfaces, capabilities. Modelled on Metal3 Bare Metal Operator's
 * `pkg/hardwareutils/bmc` AccessDetails (driver, interfaces, NeedsMAC,
 * SupportsSecureBoot, SupportsISOPreprovisioningImage,
 * RequiresProvisioningNetwork). Pure data: bundled into Temporal workflows.
 */
export type BmcType =
  | 'ipmi'
  | 'libvirt'
  | 'redfish'
  | 'redfish-virtualmedia'
  | 'redfish-uefihttp'
  | 'idrac-redfish'
  | 'idrac-virtualmedia'
  | 'ilo5-redfish'
  | 'ilo5-virtualmedia'
  | 'fake';

export interface IronicInterfaces {
  boot: string;
  deploy: string;
  inspect: string;
  management: string;
  power: string;
  bios?: string;
  raid?: string;
  firmware?: string;
  vendor?: string;
}

export interface BmcCapabilities {
  /** A boot MAC address is required even when inspection is enabled. */
  needsMAC: boolean;
  supportsSecureBoot: boolean;
  /** Virtual media: the preprovisioning (IPA) image can be booted as an ISO. */
  supportsISOPreprovisioningImage: boolean;
  requiresProvisioningNetwork: boolean;
}


export type BmcFamily = 'ipmi' | 'redfish' | 'fake';

export interface BmcTypeInfo {
  family: BmcFamily;
  /** Ironic hardware type (node `driver`). */
  driver: string;
  /**
   * Interfaces the node ends up with. Where BMO leaves an interface empty (so
   * Ironic picks the hardware type's default) the default is recorded here:
   * deploy `direct`, inspect `agent` (BMO's default inspection), and the
   * hardware type's own management/power interfaces.
   */
  interfaces: Readonly<IronicInterfaces>;
  /** Out-of-band inspect interface for BMO's "fast" inspection mode, if any. */
  outOfBandInspect?: string;
  capabilities: Readonly<BmcCapabilities>;
}

const REDFISH_BASE: Readonly<IronicInterfaces> = {
  boot: 'ipxe',
  deploy: 'direct',
  inspect: 'agent',
  management: 'redfish',
  power: 'redfish',
  raid: 'redfish',
  firmware: 'redfish',
};

const IDRAC_BASE: Readonly<IronicInterfaces> = {
  boot: 'ipxe',
  deploy: 'direct',
  inspect: 'agent',
  management: 'idrac-redfish',
  power: 'idrac-redfish',
  bios: 'idrac-redfish',
  raid: 'idrac-redfish',
  firmware: 'redfish',
  vendor: 'idrac-redfish',
};

const IPMI_INTERFACES: Readonly<IronicInterfaces> = { boot: 'ipxe', deploy: 'direct', inspect: 'agent', management: 'ipmitool', power: 'ipmitool', raid: 'no-raid' };

const IPMI_CAPS: Readonly<BmcCapabilities> = {
  needsMAC: false,
  supportsSecureBoot: false,
  supportsISOPreprovisioningImage: false,
  requiresProvisioningNetwork: true,
};

const PXE_CAPS: Readonly<BmcCapabilities> = {
  needsMAC: false,
  supportsSecureBoot: true,
  supportsISOPreprovisioningImage: false,
  requiresProvisioningNetwork: true,
};

const VMEDIA_CAPS: Readonly<BmcCapabilities> = {
  needsMAC: false,
  supportsSecureBoot: true,
  supportsISOPreprovisioningImage: true,
  requiresProvisioningNetwork: false,
};

function freezeInfo(info: BmcTypeInfo): Readonly<BmcTypeInfo> {
  Object.freeze(info.interfaces);
  Object.freeze(info.capabilities);
  return Object.freeze(info);
}

/** The capability table: one row per BMC type. */
export const BMC_TYPE_TABLE: Readonly<Record<BmcType, Readonly<BmcTypeInfo>>> = Object.freeze({
  ipmi: freezeInfo({
    family: 'ipmi',
    driver: 'ipmi',
    interfaces: { ...IPMI_INTERFACES },
    capabilities: { ...IPMI_CAPS },
  }),
  // BMO's alias of ipmi for VirtualBMC-driven libvirt VMs (metal3-dev-env): the same
  // driver, but a boot MAC is always needed (a VM's BMC knows no NIC).
  libvirt: freezeInfo({
    family: 'ipmi',
    driver: 'ipmi',
    interfaces: { ...IPMI_INTERFACES },
    capabilities: { ...IPMI_CAPS, needsMAC: true },
  }),
  redfish: freezeInfo({
    family: 'redfish',
    driver: 'redfish',
    interfaces: { ...REDFISH_BASE },
    outOfBandInspect: 'redfish',
    capabilities: { ...PXE_CAPS },
  }),
  'redfish-virtualmedia': freezeInfo({
    family: 'redfish',
    driver: 'redfish',
    interfaces: { ...REDFISH_BASE, boot: 'redfish-virtual-media' },
    outOfBandInspect: 'redfish',
    capabilities: { ...VMEDIA_CAPS },
  }),
  'redfish-uefihttp': freezeInfo({
    family: 'redfish',
    driver: 'redfish',
    interfaces: { ...REDFISH_BASE, boot: 'redfish-https' },
    outOfBandInspect: 'redfish',
    capabilities: { ...VMEDIA_CAPS },
  }),
  'idrac-redfish': freezeInfo({
    family: 'redfish',
    driver: 'idrac',
    interfaces: { ...IDRAC_BASE },
    outOfBandInspect: 'redfish',
    capabilities: { ...PXE_CAPS },
  }),
  'idrac-virtualmedia': freezeInfo({
    family: 'redfish',
    driver: 'idrac',
    interfaces: { ...IDRAC_BASE, boot: 'idrac-redfish-virtual-media' },
    outOfBandInspect: 'redfish',
    capabilities: { ...VMEDIA_CAPS },
  }),
  // BMO dropped the proliantutils-based `ilo5` hardware type; iLO 5 is driven
  // through the generic Redfish hardware type.
  'ilo5-redfish': freezeInfo({
    family: 'redfish',
    driver: 'redfish',
    interfaces: { ...REDFISH_BASE },
    outOfBandInspect: 'redfish',
    capabilities: { ...PXE_CAPS },
  }),
  'ilo5-virtualmedia': freezeInfo({
    family: 'redfish',
    driver: 'redfish',
    interfaces: { ...REDFISH_BASE, boot: 'redfish-virtual-media' },
    outOfBandInspect: 'redfish',
    capabilities: { ...VMEDIA_CAPS },
  }),
  fake: freezeInfo({
    family: 'fake',
    driver: 'fake-hardware',
    interfaces: { boot: 'fake', deploy: 'fake', inspect: 'fake', management: 'fake', power: 'fake' },
    capabilities: {
      needsMAC: true,
      supportsSecureBoot: false,
      supportsISOPreprovisioningImage: false,
      requiresProvisioningNetwork: false,
    },
  }),
});

export const BMC_TYPES: readonly BmcType[] = Object.freeze([
  'ipmi',
  'libvirt',
  'redfish',
  'redfish-virtualmedia',
  'redfish-uefihttp',
  'idrac-redfish',
  'idrac-virtualmedia',
  'ilo5-redfish',
  'ilo5-virtualmedia',
  'fake',
] as const);

export function isBmcType(value: unknown): value is BmcType {
  return typeof value === 'string' && (BMC_TYPES as readonly string[]).includes(value);
}

export const IPMI_PRIVILEGE_LEVELS = ['ADMINISTRATOR', 'OPERATOR', 'USER', 'CALLBACK'] as const;
export type IpmiPrivilegeLevel = (typeof IPMI_PRIVILEGE_LEVELS)[number];

/** A parsed `spec.bmc.address`: what metalflow needs to reach the BMC and which Ironic interfaces it implies. */
export interface BmcAccess {
  type: BmcType;
  /** The address exactly as given. */
  address: string;
  /** The scheme as given, lower-cased; `ipmi` for bare `host[:port]` addresses. */
  scheme: string;
  transport: 'ipmi' | 'http' | 'https' | 'fake';
  /** Host name or IP address, without IPv6 brackets. */
  host: string;
  /** Explicit port, or 623 for IPMI; undefined when not given for other types. */
  port?: number;
  /** '' for IPMI and fake; the Redfish system path (as given) otherwise. */
  path: string;
  /** Ironic hardware type. */
  driver: string;
  /** IPMI only: `?privilegelevel=` (BMO's query parameter), upper-cased; ADMINISTRATOR when absent. */
  privilegeLevel?: IpmiPrivilegeLevel;
  interfaces: IronicInterfaces;
  capabilities: BmcCapabilities;
}
