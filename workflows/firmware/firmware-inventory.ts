/**
 * One read of a node's BIOS settings and firmware components from Ironic,
 * for callers that talk to Temporal only: the API's firmware routes, and the
 * Kubernetes controller for a host of a configured site (it reads the default
 * site's Ironic itself). A configured site's node is read by the site's
 * worker, on the site's task queue: only it reaches that Ironic. A site that
 * does not take the read within SITE_FIRMWARE_READ_START_SECONDS fails it
 * (the caller waits for the answer; nothing ran, nothing to undo).
 * Id `firmware-inventory/<ns>/<name>`: concurrent readers of one host share
 * the run. Two events of history; no state, nothing to replay across versions.
 */
import { proxyActivities } from '@temporalio/workflow';
import { ACTIVITY_OPTIONS } from '../common/activity-options';
import type { FirmwareInventoryActivities } from '../../activities/ironic/firmware-inventory';
import { SITE_FIRMWARE_READ_START_SECONDS, type FirmwareInventory, type FirmwareInventoryInput } from '../../contracts/firmware-inventory';
import { hostSiteQueue } from '../../model/site';

const { readFirmwareInventory } = proxyActivities<FirmwareInventoryActivities>(ACTIVITY_OPTIONS.ironicFirmwareRead);

export async function firmwareInventoryWorkflow(input: FirmwareInventoryInput): Promise<FirmwareInventory> {
  const siteQueue = hostSiteQueue(input.site);
  if (!siteQueue) return readFirmwareInventory(input);
  const atSite = proxyActivities<FirmwareInventoryActivities>({ ...ACTIVITY_OPTIONS.ironicFirmwareRead, taskQueue: siteQueue, scheduleToStartTimeout: `${SITE_FIRMWARE_READ_START_SECONDS} seconds` });
  return atSite.readFirmwareInventory(input);
}
