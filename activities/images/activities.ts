/**
 * Image I/O before a deploy (clients/images/): the image URL is probed and a
 * checksum-file URL resolved to its hash, before anything is sent to Ironic
 * or the BMC. Read-only and bounded (a HEAD, 64 KiB of the image, at most
 * 1 MiB of checksum file), so safe to retry; it heartbeats while it waits.
 */
import type { Image } from '../../model/host';
import { toFailure } from '../common/failures';
import { imageDispatcher, type ImageHttpOptions } from '../../clients/images/http';
import { describeProbe, probeImage } from '../../clients/images/probe';
import { isOciUrl } from '../../model/image';
import { MD5_WARNING, resolveChecksumUrl } from '../../clients/images/checksum-file';
import { keepAlive } from '../common/activity-context';

export interface ImageCheckResult {
  /** The image to deploy: a checksum-file URL replaced by the hash found in it (and its algorithm). */
  image: Image;
  /** What the probe found, in a few words (the host's Event says it). */
  summary: string;
  /** Worth an operator's attention, not an error (md5). */
  warnings: string[];
}

/** An ImageError (its type in the details), or any other error, as the Temporal failure the workflow branches on. */
export const imageFailure = (err: unknown): unknown => toFailure(err);

export const isUrl = (checksum: string | undefined): boolean => /^https?:\/\//i.test(checksum ?? '');

const isInlineMd5 = (image: Image): boolean =>
  !isUrl(image.checksum) && (image.checksumType === 'md5' || ((image.checksumType ?? 'auto') === 'auto' && image.checksum?.length === 32));

export function createImageActivities(deps: { http?: ImageHttpOptions } = {}) {
  const dispatcher = imageDispatcher(deps.http);
  return {
    async checkImage({ image }: { image: Image }): Promise<ImageCheckResult> {
      const stop = keepAlive(5_000);
      try {
        // Ironic pulls it from the registry with the host's pull secret, which this worker never reads.
        if (isOciUrl(image.url)) return { image, summary: 'an OCI image, pulled by Ironic from its registry (not probed)', warnings: [] };
        const probe = await probeImage(dispatcher, image);
        const warnings = isInlineMd5(image) ? [MD5_WARNING] : [];
        if (!isUrl(image.checksum)) return { image, summary: describeProbe(probe), warnings };
        const resolved = await resolveChecksumUrl(dispatcher, image);
        return {
          image: { ...image, checksum: resolved.value, checksumType: resolved.algorithm },
          summary: `${describeProbe(probe)}; ${resolved.algorithm} checksum read from the checksum file`,
          warnings: resolved.warning ? [resolved.warning] : [],
        };
      } catch (err) {
        throw imageFailure(err);
      } finally {
        stop();
      }
    },
  };
}

export type ImageActivities = ReturnType<typeof createImageActivities>;
