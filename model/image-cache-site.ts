/**
 * The image cache per site (docs/images.md, *The cache per site*): a host whose site
 * (`spec.dhcp.site`) is one of the host option `imageCacheSites` has its image
 * cached by the worker at that site, which polls the site's own task queue
 * and serves its cache next to the site's hosts (its METALFLOW_IMAGE_CACHE_URL
 * is the site's cache base URL). Shared by workflows and workers.
 */
import { SITE } from './host-dhcp';

/** The task queue a site's cache worker polls (METALFLOW_IMAGE_CACHE_SITE) beside the main one. */
export const imageCacheTaskQueue = (taskQueue: string, site: string): string => `${taskQueue}@image-cache-${site}`;

/** METALFLOW_IMAGE_CACHE_SITES: comma-separated site names; unset or empty → none. */
export function parseImageCacheSites(raw: string | undefined, variable = 'METALFLOW_IMAGE_CACHE_SITES'): string[] | undefined {
  const names = (raw ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  if (names.length === 0) return undefined;
  for (const name of names) {
    if (!SITE.test(name)) throw new Error(`${variable}: "${name}" is not a site name (lower-case letters, digits and '-', at most 63, as spec.dhcp.site)`);
  }
  return [...new Set(names)];
}
