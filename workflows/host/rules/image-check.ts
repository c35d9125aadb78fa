/**
 * The image is checked before a provisioning starts (host option
 * `probeImages`): its URL probed and a checksum-file URL read
 * (activities/images/activities.ts), while the host still shows the state it
 * was in. An image that cannot be deployed is a provisioning error on the
 * host, which stays where it was (available) with nothing sent to Ironic or
 * the BMC, and is checked again after the backoff, or at once when the spec
 * changes (a new image URL), as for any failed operation.
 *
 * With the host option `cacheImages` the image then goes
 * into the workers' image cache, downloaded once and verified whole, and the
 * deploy is pointed at the cache's URL: the cache of the host's site when
 * its site has one (host option `imageCacheSites`).
 */
import { isCancellation, log, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { ImageActivities } from '../../../activities/images/activities';
import type { ImageCacheActivities } from '../../../activities/images/cache';
import type { Image } from '../../../model/host';
import { imageCacheTaskQueue } from '../../../model/image-cache-site';
import { ACTIVITY_OPTIONS } from '../../common/activity-options';
import { failureMessage } from '../../common/failure-message';
import { now, type HostContext } from '../context';

const images = proxyActivities<ImageActivities>(ACTIVITY_OPTIONS.imageCheck);
const cache = proxyActivities<ImageCacheActivities>(ACTIVITY_OPTIONS.imageTransfer);

/** The cache of the host's site: its worker polls the site's queue. */
function cacheOf(s: HostContext['s']): Pick<ImageCacheActivities, 'cacheImage'> {
  const site = s.spec?.dhcp?.site;
  if (!site || !s.options.imageCacheSites?.includes(site)) return cache;
  return proxyActivities<ImageCacheActivities>(ACTIVITY_OPTIONS.imageTransferAtSite(imageCacheTaskQueue(workflowInfo().taskQueue, site)));
}

/** The image as deployed, and whether its whole content was verified against its checksum on the way (the cache). */
export interface DeployImage {
  image: Image;
  verified: boolean;
}

/**
 * The image to deploy (a checksum-file URL resolved to its hash; with the
 * cache, the cache's URL), undefined when no check runs, or `again` when the
 * host must decide again: the check failed and its backoff is over, or the
 * spec changed while it ran.
 */
export async function imageToDeploy(ctx: HostContext, backoff: () => Promise<void>): Promise<DeployImage | undefined | 'again'> {
  const { s } = ctx;
  const image = s.spec?.image;
  if (!image) return undefined;
  const probe = s.options.probeImages === true;
  const cached = s.options.cacheImages === true;
  if (!probe && !cached) return undefined;
  // A new spec, a delete or a pause while the check ran: its answer may be moot, so the host decides again.
  const generation = s.generation;
  const deleteRequested = s.deleteRequested;
  const nudged = ctx.nudges;
  const moved = (): boolean => s.generation !== generation || s.deleteRequested !== deleteRequested || ctx.nudges !== nudged;
  try {
    let deploy: DeployImage = { image, verified: false };
    if (probe) {
      const checked = await images.checkImage({ image });
      if (moved()) return 'again';
      for (const message of checked.warnings) {
        log.warn(message);
        await ctx.writeStatus({ type: 'Warning', reason: 'ImageChecksumDeprecated', message });
      }
      deploy = { image: checked.image, verified: false };
    }
    if (cached) {
      const put = await cacheOf(s).cacheImage({ image: deploy.image });
      if (moved()) return 'again';
      if (put.warning) await ctx.writeStatus({ type: 'Warning', reason: 'ImageNotCached', message: put.warning });
      deploy = { image: put.image, verified: put.warning === undefined };
    }
    return deploy;
  } catch (err) {
    if (isCancellation(err)) throw err;
    if (moved()) return 'again';
    s.status.errorType = 'provisioning error';
    s.status.errorMessage = `image check failed: ${failureMessage(err)}`;
    s.status.errorCount += 1;
    s.status.operationalStatus = 'error';
    s.status.lastUpdated = now();
    ctx.indexForSearch();
    await ctx.writeStatus({ type: 'Warning', reason: 'ImageCheckFailed', message: s.status.errorMessage });
    await backoff();
    return 'again';
  }
}
