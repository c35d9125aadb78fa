/**
 * The worker's image cache (METALFLOW_IMAGE_CACHE_*): opened, its partial
 * downloads deleted, and served over HTTP with the direct provisioner's config drives.
 */
import type { ImageCacheConfig } from '../config/env';
import type { ServedImageCache } from '../activities/images/cache';
import type { ServedConfigDrives } from '../activities/images/config-drive';
import { ImageCache } from '../clients/images/cache';
import { startCacheServer } from '../clients/images/cache-server';
import { ConfigDriveStore } from '../clients/images/config-drive';
import { imageDispatcher } from '../clients/images/http';
import { readTlsFiles } from '../clients/tls/files';
import type { AddressPolicy } from '../clients/images/address-policy';

export async function startImageCache(config: ImageCacheConfig, imageCaFile: string | undefined, policy: AddressPolicy): Promise<{ imageCache: ServedImageCache; configDrives: ServedConfigDrives }> {
  // The origin's downloads keep to the worker's fetch policy, as the image check does.
  const dispatcher = imageDispatcher({ policy, ...(imageCaFile ? { ca: readTlsFiles({ caFile: imageCaFile }).ca } : {}) });
  const cache = await new ImageCache({ dir: config.dir, maxBytes: config.maxBytes, dispatcher, log: (line) => console.log(`[worker] ${line}`) }).open();
  const store = new ConfigDriveStore(config.dir);
  const server = await startCacheServer(cache, { host: config.host, port: config.port }, [store.route]);
  console.log(`[worker] image cache ${config.dir} (${cache.totalBytes} of ${config.maxBytes} bytes) served at ${server.boundUrl}, as ${config.url}`);
  return { imageCache: { cache, baseUrl: config.url }, configDrives: { store, baseUrl: config.url } };
}
