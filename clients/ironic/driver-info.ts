/**
 * Ironic's wire format for BMC access (`driver_info`), kept out of `types/`:
 * types are preloaded into the workflow sandbox and hold no peer's format.
 */
import { BMC_TYPE_TABLE, IPMI_DEFAULT_PORT, hostForUrl, type BmcAccess } from '../../model/bmc';

/**
 * Ironic `driver_info` for a node, keyed as BMO does. The password appears
 * only under the `*_password` key. `fake-hardware` needs no BMC access, so
 * it gets an empty object (credentials are not copied anywhere needlessly).
 */
export function ironicDriverInfo(
  access: BmcAccess,
  creds: { username: string; password: string },
  opts: {
    disableCertificateVerification?: boolean;
    /** For https Redfish BMCs: a CA bundle path on the Ironic conductor, Ironic's `redfish_verify_ca`. */
    redfishVerifyCa?: string;
  } = {},
): Record<string, string | number | boolean> {
  const family = BMC_TYPE_TABLE[access.type].family;
  switch (family) {
    case 'ipmi': {
      const info: Record<string, string | number | boolean> = {
        ipmi_address: access.host,
        ipmi_port: access.port ?? IPMI_DEFAULT_PORT,
        ipmi_username: creds.username,
        ipmi_password: creds.password,
        ipmi_priv_level: access.privilegeLevel ?? 'ADMINISTRATOR',
      };
      // BMO sets this for IPMI too; Ironic's ipmitool driver ignores it.
      if (opts.disableCertificateVerification) info.ipmi_verify_ca = false;
      return info;
    }
    case 'redfish': {
      const scheme = access.transport === 'http' ? 'http' : 'https';
      const port = access.port === undefined ? '' : `:${access.port}`;
      const info: Record<string, string | number | boolean> = {
        redfish_address: `${scheme}://${hostForUrl(access.host)}${port}`,
        redfish_system_id: access.path,
        redfish_username: creds.username,
        redfish_password: creds.password,
      };
      if (opts.disableCertificateVerification) info.redfish_verify_ca = false;
      else if (opts.redfishVerifyCa && scheme === 'https') info.redfish_verify_ca = opts.redfishVerifyCa;
      return info;
    }
    case 'fake':
      return {};
  }
}
