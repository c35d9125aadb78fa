/**
 * The store of a site that holds its hosts' BMC credentials itself (`"secrets": "site"`,
 * docs/sites.md), in API mode: a local secret store (the format of METALFLOW_SECRET_DIR)
 * at METALFLOW_SITE_SECRET_DIR, read by the site worker and written by
 * `npm run site-secret`, on the site's machine. Never the central METALFLOW_SECRET_DIR.
 */
import { basename, dirname, join } from 'node:path';

/** Its folder and key, or a clear refusal (`site`: the site whose worker asks, for the message). */
export function siteSecretDirSettings(site: string | undefined, env: NodeJS.ProcessEnv): { dir: string; key?: string; keyFile: string } {
  const dir = env.METALFLOW_SITE_SECRET_DIR?.trim();
  if (!dir) {
    throw new Error(
      site === undefined
        ? 'set METALFLOW_SITE_SECRET_DIR to the site worker\'s own secret store (the folder its site worker reads BMC credentials from)'
        : `site "${site}" holds its BMC credentials at the site ("secrets": "site" in METALFLOW_SITES_FILE): set METALFLOW_SITE_SECRET_DIR to this site worker's own secret store (put a host's credentials there with npm run site-secret -- put), or give the site "secrets": "central"`,
    );
  }
  if (env.METALFLOW_SECRET_DIR?.trim() && env.METALFLOW_SECRET_DIR.trim() === dir) {
    throw new Error(`METALFLOW_SITE_SECRET_DIR is METALFLOW_SECRET_DIR (${dir}), the central secret store: a site that holds its credentials needs a store of its own`);
  }
  const key = env.METALFLOW_SITE_SECRET_KEY?.trim();
  return { dir, ...(key ? { key } : {}), keyFile: env.METALFLOW_SITE_SECRET_KEY_FILE?.trim() || join(dirname(dir), `${basename(dir)}.key`) };
}
