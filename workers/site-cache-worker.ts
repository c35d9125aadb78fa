/**
 * A site's image cache worker (METALFLOW_IMAGE_CACHE_SITE, docs/images.md, *The cache per site*):
 * beside the worker's main task queue, it polls the site's cache queue
 * (model/image-cache-site.ts) with the cache activities alone, so hosts of
 * the site have their images downloaded and served here, next to them.
 */
import type { AddressPolicy } from '../clients/images/address-policy';
import { Worker, type NativeConnection } from '@temporalio/worker';
import type { DataConverter } from '@temporalio/common';
import { createImageCacheActivities, type ServedImageCache } from '../activities/images/cache';
import { imageCacheTaskQueue } from '../model/image-cache-site';
import { heartbeatThrottleSeconds } from '../config/env';

export interface SiteCacheWorkerDeps {
  connection: NativeConnection;
  namespace: string;
  /** The main task queue, which names the site's queue. */
  taskQueue: string;
  site: string;
  cache: ServedImageCache;
  imageCa?: Buffer;
  /** The worker's image fetch policy (METALFLOW_IMAGE_FETCH_*). */
  fetchPolicy: AddressPolicy;
  dataConverter?: DataConverter;
}

export async function createSiteCacheWorker(deps: SiteCacheWorkerDeps): Promise<Worker> {
  const { cacheImage } = createImageCacheActivities({ cache: deps.cache, http: { policy: deps.fetchPolicy, ...(deps.imageCa ? { ca: deps.imageCa } : {}) } });
  return Worker.create({
    connection: deps.connection,
    namespace: deps.namespace,
    taskQueue: imageCacheTaskQueue(deps.taskQueue, deps.site),
    ...(deps.dataConverter ? { dataConverter: deps.dataConverter } : {}),
    activities: { cacheImage },
    maxHeartbeatThrottleInterval: `${heartbeatThrottleSeconds()} seconds`,
  });
}
