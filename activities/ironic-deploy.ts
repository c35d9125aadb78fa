/**
 * The provisioned side of a node: deploy (image in instance_info, config
 * drive from the host's Secrets), undeploy, and adopt (active without a
 * deploy, for a node registered again under a host that is provisioned).
 */
import type { HostRef, Image, SecretReference } from '../types/host';
import type { IronicClient, JsonPatchOp } from '../clients/ironic/client';
import { readSecretKey, type SecretReader } from '../clients/secrets/secret-store';
import { parseConfigMapping } from '../types/config-data';
import { lastError, operationFailed, summary, type NodeDriver, type NodeSummary, type NodeTarget } from './ironic-node-driver';

export interface DeployDeps {
  ironic: IronicClient;
  secrets: SecretReader;
  driver: NodeDriver;
}

interface DeployInput extends NodeTarget {
  nodeId: string;
  image: Image;
  userData?: SecretReference;
  networkData?: SecretReference;
  metaData?: SecretReference;
  /** meta_data.uuid: the BareMetalHost's uid (or the API host's); the node's UUID only for runs recorded before it. */
  uid?: string;
}

/** The instance_info keys the image sets; any of them the image does not set is removed. */
const IMAGE_KEYS = ['image_source', 'image_disk_format', 'image_checksum', 'image_os_hash_algo', 'image_os_hash_value'] as const;

/**
 * The image as Ironic's instance_info wants it, as Metal3 writes it: an unset
 * format is left for Ironic to detect from the image; a checksum with its
 * algorithm (given, or a digest's length) goes to image_os_hash_*, a
 * checksum-file URL too when its checksumType is given, else to
 * image_checksum. Keys left from an
 * earlier image (`current`) that this one does not set are removed.
 */
export function instanceInfo(image: Image, current: Record<string, unknown> = {}): JsonPatchOp[] {
  const want: Partial<Record<(typeof IMAGE_KEYS)[number], string>> = { image_source: image.url };
  if (image.format) want.image_disk_format = image.format;
  const checksum = image.checksum;
  const given = image.checksumType && image.checksumType !== 'auto' ? image.checksumType : undefined;
  if (checksum && /^https?:\/\//i.test(checksum)) {
    // The agent reads the checksum file; a given algorithm goes with it, as Metal3 sends it.
    if (given) Object.assign(want, { image_os_hash_algo: given, image_os_hash_value: checksum });
    else want.image_checksum = checksum;
  } else if (checksum) {
    const algo = given ?? ({ 32: 'md5', 64: 'sha256', 128: 'sha512' } as Record<number, string>)[checksum.length];
    Object.assign(want, { image_os_hash_algo: algo, image_os_hash_value: checksum.toLowerCase() });
  }
  const ops: JsonPatchOp[] = [];
  for (const key of IMAGE_KEYS) {
    const value = want[key];
    if (value !== undefined) ops.push({ op: 'add', path: `/instance_info/${key}`, value });
    else if (key in (current ?? {})) ops.push({ op: 'remove', path: `/instance_info/${key}` });
  }
  return ops;
}

export function createDeployActivities(deps: DeployDeps) {
  const { ironic, secrets } = deps;
  const { drive, setAutomatedClean } = deps.driver;

  async function configDrive(ref: HostRef, input: DeployInput): Promise<Record<string, unknown> | undefined> {
    const read = (sref: SecretReference | undefined, keys: string[]) =>
      sref ? readSecretKey(secrets, ref.namespace, sref.name, keys) : Promise.resolve(undefined);
    const userData = await read(input.userData, ['userData', 'value']);
    const networkData = await read(input.networkData, ['networkData', 'value']);
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
    return {
      meta_data: meta,
      ...(userData ? { user_data: userData } : {}),
      ...(networkData ? { network_data: parseJson('networkData', networkData) } : {}),
    };
  }

  async function deployNode(input: DeployInput): Promise<NodeSummary> {
    const start = async (current: Record<string, unknown>): Promise<Record<string, unknown>> => {
      await ironic.patchNode(input.nodeId, instanceInfo(input.image, current));
      const configdrive = await configDrive(input.ref, input);
      return configdrive ? { configdrive } : {};
    };
    const node = await drive(input.nodeId, (n, issued) => {
      switch (n.provision_state) {
        case 'active':
          return { done: true };
        case 'available':
          // Deploying only ever leaves `available` for good: back there, someone tore the node down (the host's
          // deprovision after it cancelled this deploy); deploying it again would undo that.
          return issued.includes('active')
            ? { fail: 'the node was torn down (available again) while it deployed; not deploying it a second time' }
            : { verb: 'active', prepare: () => start(n.instance_info) };
        case 'deploy failed':
          return issued.includes('active') ? { fail: `deploy failed: ${lastError(n)}` } : { verb: 'active', prepare: () => start(n.instance_info) };
        case 'manageable':
          return { verb: 'provide' };
        case 'clean failed':
          return issued.includes('provide') ? { fail: `cleaning before deploy failed: ${lastError(n)}` } : { verb: 'manage' };
        default:
          return { fail: `cannot provision a node in Ironic state "${n.provision_state}"` };
      }
    });
    return summary(node);
  }

  async function undeployNode(input: NodeTarget & { nodeId: string; automatedCleaning: boolean }): Promise<NodeSummary> {
    const setCleaning = () => setAutomatedClean(input.nodeId, input.automatedCleaning);
    const node = await drive(input.nodeId, (n, issued) => {
      switch (n.provision_state) {
        case 'available':
          return { done: true };
        case 'active':
        case 'deploy failed':
          return { verb: 'deleted', prepare: setCleaning };
        case 'clean failed':
          return issued.includes('deleted') || issued.includes('provide')
            ? { fail: `cleaning after deprovisioning failed: ${lastError(n)}` }
            : { verb: 'manage' };
        case 'manageable':
          return { verb: 'provide' };
        case 'error':
          return issued.includes('deleted') ? { fail: `deprovisioning failed: ${lastError(n)}` } : { verb: 'deleted' };
        default:
          return { fail: `cannot deprovision a node in Ironic state "${n.provision_state}"` };
      }
    });
    return summary(node);
  }

  /**
   * Makes a registered (manageable) node active without deploying: Ironic's
   * `adopt`, with the image the host was provisioned with in instance_info so
   * Ironic can later tear it down and clean as for any deployed node.
   */
  async function adoptNode(input: NodeTarget & { nodeId: string; image?: Image }): Promise<NodeSummary> {
    const setImage = async (current: Record<string, unknown>): Promise<void> => {
      if (input.image) await ironic.patchNode(input.nodeId, instanceInfo(input.image, current));
    };
    const node = await drive(input.nodeId, (n, issued) => {
      switch (n.provision_state) {
        case 'active':
          return { done: true };
        case 'manageable':
          return { verb: 'adopt', prepare: () => setImage(n.instance_info) };
        case 'adopt failed':
          return issued.includes('adopt') ? { fail: `adoption failed: ${lastError(n)}` } : { verb: 'adopt', prepare: () => setImage(n.instance_info) };
        case 'enroll':
        case 'available':
          return { verb: 'manage' };
        default:
          return { fail: `cannot adopt a node in Ironic state "${n.provision_state}"` };
      }
    });
    return summary(node);
  }

  return { deployNode, undeployNode, adoptNode };
}
