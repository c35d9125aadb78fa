/**
 * The image is checked before a provisioning starts (patch `image-probe`,
 * host option `probeImages`): its URL probed and a checksum-file URL read
 * (activities/image-activities.ts), while the host still shows the state it
 * was in. An image that cannot be deployed is a provisioning error on the
 * host, which stays where it was (available) with nothing sent to Ironic or
 * the BMC, and is checked again after the backoff, or at once when the spec
 * changes (a new image URL), as for any failed operation.
 */
import { isCancellation, log, patched, proxyActivities } from '@temporalio/workflow';
import type { ImageActivities } from '../activities/image-activities';
import type { Image } from '../types/host';
import { QUIET_RETRY } from './operation-common';
import { failureMessage } from './failure-message';
import { now, type HostContext } from './host-context';

const images = proxyActivities<ImageActivities>({
  startToCloseTimeout: '3 minutes',
  heartbeatTimeout: '30 seconds',
  // A server that does not answer is asked a few times (about 15 s), then it is the host's error.
  retry: { ...QUIET_RETRY, maximumAttempts: 4 },
});

/**
 * The image to deploy (a checksum-file URL resolved to its hash), undefined
 * when no check runs, or `again` when the host must decide again: the check
 * failed and its backoff is over, or the spec changed while it ran.
 */
export async function imageToDeploy(ctx: HostContext, backoff: () => Promise<void>): Promise<Image | undefined | 'again'> {
  const { s } = ctx;
  const image = s.spec?.image;
  if (!image || s.options.probeImages !== true || !patched('image-probe')) return undefined;
  // A new spec, a delete or a pause while the check ran: its answer may be moot, so the host decides again.
  const generation = s.generation;
  const deleteRequested = s.deleteRequested;
  const nudged = ctx.nudges;
  const moved = (): boolean => s.generation !== generation || s.deleteRequested !== deleteRequested || ctx.nudges !== nudged;
  try {
    const checked = await images.checkImage({ image });
    if (moved()) return 'again';
    for (const message of checked.warnings) {
      log.warn(message);
      await ctx.sync({ type: 'Warning', reason: 'ImageChecksumDeprecated', message });
    }
    return checked.image;
  } catch (err) {
    if (isCancellation(err)) throw err;
    if (moved()) return 'again';
    s.status.errorType = 'provisioning error';
    s.status.errorMessage = `image check failed: ${failureMessage(err)}`;
    s.status.errorCount += 1;
    s.status.operationalStatus = 'error';
    s.status.lastUpdated = now();
    ctx.publish();
    await ctx.sync({ type: 'Warning', reason: 'ImageCheckFailed', message: s.status.errorMessage });
    await backoff();
    return 'again';
  }
}
