/**
 * The activities that drive Ironic, as the worker registers them. Each
 * concept has its own file: the level-triggered loop they share
 * (ironic-node-driver.ts), registration (ironic-register.ts), deploy and
 * adoption (ironic-deploy.ts), power and removal (ironic-teardown.ts).
 */
import { DEFAULT_POLL, type PollOptions } from '../common/activity-context';
import type { IronicClient } from '../../clients/ironic/client';
import type { InspectionPreference } from '../../clients/ironic/node-spec';
import { DEFAULT_WATCH, NodeWatcher, type WatchOptions } from '../../clients/ironic/node-watcher';
import type { SecretReader } from '../../clients/secrets/secret-store';
import { createNodeDriver, wrap } from './node-driver';
import { createRegisterActivities } from './register';
import { createDeployActivities } from './deploy';
import { createTeardownActivities } from './teardown';
import { createCleanActivities } from './clean';
import { createNodeSettingsActivities } from './node-settings';

export type { NodeSummary, NodeTarget } from './node-driver';

export interface IronicActivityDeps {
  ironic: IronicClient;
  /** User, network and meta data, registry pull secrets, and BMC credentials unless `bmcSecrets` is given. */
  secrets: SecretReader;
  /** A site's own store of its hosts' BMC credentials (`"secrets": "site"` in METALFLOW_SITES_FILE, docs/sites.md). */
  bmcSecrets?: SecretReader;
  /**
   * `driver_info.redfish_verify_ca` of https Redfish nodes: a CA bundle path on
   * the Ironic conductor (METALFLOW_IRONIC_REDFISH_VERIFY_CA); unset leaves
   * Ironic's default (`[redfish] verify_ca`, else the system's CAs).
   */
  redfishVerifyCa?: string;
  /** How to inspect hosts whose BMC can be inspected out of band (no agent ramdisk needed). */
  inspection?: InspectionPreference;
  poll?: PollOptions;
  /** Shared waiting on node state changes; one per worker. */
  watcher?: NodeWatcher;
  watch?: WatchOptions;
}

export function createIronicActivities(deps: IronicActivityDeps) {
  const { ironic, secrets } = deps;
  const poll = deps.poll ?? DEFAULT_POLL;
  const watcher = deps.watcher ?? new NodeWatcher(ironic, deps.watch ?? DEFAULT_WATCH);
  const driver = createNodeDriver({ ironic, poll, watcher });
  const bmcSecrets = deps.bmcSecrets ? { bmcSecrets: deps.bmcSecrets } : {};
  const settings = createNodeSettingsActivities({ ironic, secrets, ...bmcSecrets, redfishVerifyCa: deps.redfishVerifyCa, driver });
  const { firstRead } = settings;
  const teardown = createTeardownActivities({ ironic, poll, driver });
  const register = createRegisterActivities({ ironic, secrets, ...bmcSecrets, inspection: deps.inspection ?? 'out-of-band', redfishVerifyCa: deps.redfishVerifyCa, driver, firstRead, powerFrom: teardown.powerFrom });
  const deploy = createDeployActivities({ ironic, secrets, driver, firstRead });
  const clean = createCleanActivities({ ironic, driver });

  return {
    detachNode: wrap(teardown.detachNode),
    holdNode: wrap(teardown.holdNode),
    releaseNodeHold: wrap(teardown.releaseNodeHold),
    adoptNode: wrap(deploy.adoptNode),
    ensureNode: wrap(register.ensureNode),
    manageNode: wrap(register.manageNode),
    inspectNode: wrap(register.inspectNode),
    prepareNode: wrap(register.prepareNode),
    provideNode: wrap(register.provideNode),
    cleanNode: wrap(clean.cleanNode),
    serviceNode: wrap(clean.serviceNode),
    deployNode: wrap(deploy.deployNode),
    undeployNode: wrap(deploy.undeployNode),
    setPower: wrap(teardown.setPower),
    deleteNode: wrap(teardown.deleteNode),
    syncNodeSettings: wrap(settings.syncNodeSettings),
  };
}

export type IronicActivities = ReturnType<typeof createIronicActivities>;
