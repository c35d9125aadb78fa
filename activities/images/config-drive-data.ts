/**
 * What a host's config drive holds, read from its Secrets at the moment of
 * use (never in workflow history, logs or errors): `meta_data` (metalflow's
 * keys, as Metal3 writes them, then spec.metaData's), `user_data` and
 * `network_data`. Ironic gets it as the deploy's `configdrive` (it builds the
 * ISO); the direct provisioner builds the ISO itself (config-drive-activities.ts).
 */
import type { HostRef, SecretReference } from '../../model/host';
import type { SecretReader } from '../../clients/secrets/secret-store';
import { readSecretKey } from '../common/secret-key';
import { parseConfigMapping, type ConfigDriveData } from '../../model/config-data';
import { renderNetworkData, type AddressNetworkData } from '../../model/network-data';
import { operationFailed } from '../ironic/node-driver';

export interface ConfigDriveSources {
  userData?: SecretReference;
  networkData?: SecretReference;
  metaData?: SecretReference;
  /** Metal3's fallback for the network data when networkData is unset. */
  preprovisioningNetworkDataName?: string;
  /** The host's pool address (spec.dhcp.ipPool): network_data rendered from it when no Secret gives one. */
  networkDataFrom?: AddressNetworkData;
  /** meta_data.uuid: the host's uid; `nodeId` for runs recorded before it. */
  uid?: string;
  nodeId?: string;
}

export async function configDriveData(secrets: SecretReader, ref: HostRef, input: ConfigDriveSources): Promise<ConfigDriveData> {
  const read = (sref: SecretReference | undefined, keys: string[]) =>
    sref ? readSecretKey(secrets, ref.namespace, sref.name, keys) : Promise.resolve(undefined);
  const userData = await read(input.userData, ['userData', 'value']);
  // As Metal3: without networkData, the preprovisioning network data (its networkData key only) is the default.
  const networkData = input.networkData
    ? await read(input.networkData, ['networkData', 'value'])
    : input.preprovisioningNetworkDataName
      ? (await secrets.read(ref.namespace, input.preprovisioningNetworkDataName))?.networkData || undefined
      : undefined;
  const metaData = await read(input.metaData, ['metaData', 'value']);
  // JSON or YAML, as Metal3 reads them (CAPM3's Metal3Data writes YAML); the reason never quotes the data.
  const parseJson = (what: string, text: string): Record<string, unknown> => {
    const parsed = parseConfigMapping(text);
    if ('reason' in parsed) throw operationFailed(`the ${what} secret must hold a JSON object or YAML mapping: it ${parsed.reason}`);
    return parsed.value;
  };
  const meta: Record<string, unknown> = {
    uuid: input.uid ?? input.nodeId,
    'metal3-namespace': ref.namespace,
    'metal3-name': ref.name,
    'local-hostname': ref.name,
    local_hostname: ref.name,
    name: ref.name,
    ...(metaData ? parseJson('metaData', metaData) : {}),
  };
  const rendered = !networkData && input.networkDataFrom ? renderNetworkData(input.networkDataFrom) : undefined;
  return {
    meta_data: meta,
    ...(userData ? { user_data: userData } : {}),
    ...(networkData ? { network_data: parseJson('networkData', networkData) } : rendered ? { network_data: rendered } : {}),
  };
}
