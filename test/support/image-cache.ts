/**
 * The image cache as the worker runs it (clients/images/cache.ts and its HTTP
 * server), in a temporary directory, served on 127.0.0.1 (a free port).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ImageCache } from '../../clients/images/cache';
import { startCacheServer, type CacheServer } from '../../clients/images/cache-server';
import { ConfigDriveStore } from '../../clients/images/config-drive';
import type { ServedConfigDrives } from '../../activities/images/config-drive';
import { imageDispatcher } from '../../clients/images/http';
import type { ServedImageCache } from '../../activities/images/cache';

export interface TestImageCache {
  served: ServedImageCache;
  configDrives: ServedConfigDrives;
  cache: ImageCache;
  server: CacheServer;
  dir: string;
  close(): Promise<void>;
}

export async function startTestImageCache(opts: { maxBytes?: number; dir?: string } = {}): Promise<TestImageCache> {
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'metalflow-image-cache-'));
  const cache = await new ImageCache({ dir, maxBytes: opts.maxBytes ?? 2 ** 30, dispatcher: imageDispatcher({ timeoutMs: 30_000 }) }).open();
  const store = new ConfigDriveStore(dir);
  const server = await startCacheServer(cache, { host: '127.0.0.1', port: 0 }, [store.route]);
  return {
    served: { cache, baseUrl: server.boundUrl },
    configDrives: { store, baseUrl: server.boundUrl },
    cache,
    server,
    dir,
    close: async () => {
      await server.close();
      if (!opts.dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}
