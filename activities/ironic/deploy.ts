/**
 * The provisioned side of a node: deploy (image in instance_info, config
 * drive from the host's Secrets), undeploy, and adopt (active without a
 * deploy, for a node registered again under a host that is provisioned).
 */
import type { HostRef, Image } from '../../model/host';
import type { IronicClient, JsonPatchOp } from '../../clients/ironic/client';
import type { SecretReader } from '../../clients/secrets/secret-store';
import { registryCredentials } from '../../clients/secrets/registry-credentials';
import { configDriveData, type ConfigDriveSources } from '../images/config-drive-data';
import { isOciUrl } from '../../model/image';
import { deployInterfaceOps, deploySteps, instanceInfo, isLiveIso, type DeployKind } from './instance-info';
import { automatedCleanOps, operationFailed, registeredSummary, summary, type NodeDriver, type NodeSummary, type NodeTarget, type RegisteredNode, type Step } from './node-driver';
import { createRamdiskCheck } from './ramdisk';
import type { FirstRead, InStepSettings } from './node-settings';

export interface DeployDeps {
  ironic: IronicClient;
  secrets: SecretReader;
  driver: NodeDriver;
  firstRead: FirstRead;
}

export { instanceInfo } from './instance-info';

interface DeployInput extends NodeTarget, ConfigDriveSources, InStepSettings {
  nodeId: string;
  /** Optional only with a custom deploy (Metal3: its image is optional). */
  image?: Image;
  /** `customDeploy.method`: deploy with Ironic's custom-agent interface and this deploy step. */
  customDeploy?: string;
  /**
   * spec.automatedCleaningMode set on a manageable node before its `provide` (BMO cleans when provisioning
   * starts); unset (runs scheduled before it) leaves the node's own automated_clean, set at registration.
   */
  automatedCleaning?: boolean;
}

export function createDeployActivities(deps: DeployDeps) {
  const { ironic, secrets } = deps;
  const { drive } = deps.driver;
  const { namingRamdisk } = createRamdiskCheck(ironic);

  /** `user:password` for an oci:// image's registry, read at the moment of use (never in history or logs). */
  async function pullSecret(ref: HostRef, image: Image | undefined): Promise<string | undefined> {
    const name = image?.ociAuthSecretName;
    if (!image || !name || !isOciUrl(image.url)) return undefined;
    const data = await secrets.read(ref.namespace, name);
    if (!data) throw operationFailed(`spec.image.ociAuthSecretName: Secret ${ref.namespace}/${name} not found`);
    const creds = registryCredentials(data, image.url);
    if ('error' in creds) throw operationFailed(`spec.image.ociAuthSecretName: Secret ${ref.namespace}/${name} ${creds.error}`);
    return creds.value;
  }

  const configDrive = (ref: HostRef, input: DeployInput) => configDriveData(secrets, ref, input);

  async function deployNode(input: DeployInput): Promise<NodeSummary> {
    let kind: Promise<DeployKind> | undefined;
    /** The kind of deploy, with the registry credentials read once per attempt, at the moment of first use. */
    const deployKind = (): Promise<DeployKind> =>
      (kind ??= pullSecret(input.ref, input.image).then((secret) => ({
        ...(input.customDeploy ? { customDeploy: input.customDeploy } : {}),
        ...(secret ? { pullSecret: secret } : {}),
      })));
    /** The deploy verb: instance_info (and deploy interface) written with the sent marker, then the config drive and steps as its arguments. */
    const deploy = (n: { instance_info: Record<string, unknown>; deploy_interface?: string | null }): Step => {
      return {
        verb: 'active',
        patch: async () => {
          const k = await deployKind();
          return [...instanceInfo(input.image, n.instance_info, k), ...deployInterfaceOps(input.image, n.deploy_interface, k)];
        },
        prepare: async () => {
          const steps = deploySteps(await deployKind());
          // As Metal3: no config drive for a live ISO (some BMCs cannot attach a second virtual medium).
          const configdrive = isLiveIso(input.image, await deployKind()) ? undefined : await configDrive(input.ref, input);
          return { ...(configdrive ? { configdrive } : {}), ...(steps ? { deploy_steps: steps } : {}) };
        },
      };
    };
    const { automatedCleaning } = input;
    const node = await namingRamdisk(input.nodeId, () => drive(input.nodeId, (n, issued) => {
      switch (n.provision_state) {
        case 'active':
          return { done: true };
        case 'available':
          // Deploying only ever leaves `available` for good: back there, someone tore the node down (the host's
          // deprovision after it cancelled this deploy); deploying it again would undo that.
          return issued.includes('active')
            ? { fail: 'the node was torn down (available again) while it deployed; not deploying it a second time' }
            : deploy(n);
        case 'deploy failed':
          return issued.includes('active') ? { failed: 'deploy failed' } : deploy(n);
        case 'manageable': {
          // As BMO: automated cleaning runs here, when provisioning starts, not when the host became available.
          const clean = automatedCleaning === undefined ? [] : automatedCleanOps(n, automatedCleaning);
          // A deploy on the node's own deploy interface (a disk image): its instance_info is written with the provide's
          // sent marker, which announces the deploy (`then`), so `active` follows `available` with no PATCH of its own.
          // A deploy that changes the deploy interface (live ISO, custom deploy) changes it after the cleaning, as before.
          if (deployInterfaceOps(input.image, n.deploy_interface, { ...(input.customDeploy ? { customDeploy: input.customDeploy } : {}) }).length > 0) {
            return { verb: 'provide', ...(clean.length > 0 ? { patch: () => clean } : {}) };
          }
          return { verb: 'provide', then: 'active', patch: async () => [...clean, ...instanceInfo(input.image, n.instance_info, await deployKind())] };
        }
        case 'clean failed':
          return issued.includes('provide') ? { failed: 'cleaning before deploy failed' } : { verb: 'manage' };
        default:
          return { fail: `cannot provision a node in Ironic state "${n.provision_state}"` };
      }
    }, { firstRead: deps.firstRead(input.ref, input.settings) }));
    return summary(node);
  }

  async function undeployNode(input: NodeTarget & InStepSettings & { nodeId: string; automatedCleaning: boolean }): Promise<NodeSummary> {
    const node = await namingRamdisk(input.nodeId, () => drive(input.nodeId, (n, issued) => {
      switch (n.provision_state) {
        case 'available':
          return { done: true };
        case 'active':
        case 'deploy failed':
          return { verb: 'deleted', patch: () => automatedCleanOps(n, input.automatedCleaning) };
        case 'clean failed':
          return issued.includes('deleted') || issued.includes('provide')
            ? { failed: 'cleaning after deprovisioning failed' }
            : { verb: 'manage' };
        case 'manageable':
          return { verb: 'provide' };
        case 'error':
          return issued.includes('deleted') ? { failed: 'deprovisioning failed' } : { verb: 'deleted' };
        default:
          return { fail: `cannot deprovision a node in Ironic state "${n.provision_state}"` };
      }
    }, { firstRead: deps.firstRead(input.ref, input.settings) }));
    return summary(node);
  }

  /**
   * Makes a registered (manageable) node active without deploying: Ironic's
   * `adopt`, with the image the host was provisioned with in instance_info so
   * Ironic can later tear it down and clean as for any deployed node. Its power only where Ironic knows it
   * (registeredSummary): an adopted host is never powered on again for a power state its driver does not report.
   */
  async function adoptNode(input: NodeTarget & { nodeId: string; image?: Image }): Promise<RegisteredNode> {
    const setImage = (n: { instance_info: Record<string, unknown>; deploy_interface?: string | null }): JsonPatchOp[] =>
      input.image ? [...instanceInfo(input.image, n.instance_info), ...deployInterfaceOps(input.image, n.deploy_interface)] : [];
    const node = await drive(input.nodeId, (n, issued) => {
      switch (n.provision_state) {
        case 'active':
          return { done: true };
        case 'manageable':
          return { verb: 'adopt', patch: () => setImage(n) };
        case 'adopt failed':
          return issued.includes('adopt') ? { failed: 'adoption failed' } : { verb: 'adopt', patch: () => setImage(n) };
        case 'enroll':
        case 'available':
          return { verb: 'manage' };
        default:
          return { fail: `cannot adopt a node in Ironic state "${n.provision_state}"` };
      }
    });
    return registeredSummary(node);
  }

  return { deployNode, undeployNode, adoptNode };
}
