/**
 * Sites (docs/sites.md): a site is a place with its own Ironic, DHCP servers
 * and image cache, served by a site worker that polls the site's own task
 * queue. A host belongs to one site (`spec.site`; in Kubernetes mode the
 * `metalflow.io/site` label); a host without one belongs to the default site,
 * whose hardware the central worker drives on the main task queue, as a
 * single-site install always has. Sites are what the operator configured
 * (config/sites.ts): a caller names a site, never an Ironic URL.
 */
import type { FieldError } from './field-error';
import { SITE } from './host-dhcp';

/** The site of hosts that name none: the settings of the environment (IRONIC_URL and the rest), on the main task queue. */
export const DEFAULT_SITE = 'default';

/** How long a site may leave a call unstarted before the host says it is unreachable (a host option; tests shorten it). */
export const DEFAULT_SITE_WATCH_SECONDS = 60;

/** The BareMetalHost label naming its site (Kubernetes mode); absent → the default site. */
export const SITE_LABEL = 'metalflow.io/site';

/** The label as the field a BareMetalHost's refusals name (the controller tells a site refusal by it). */
export const SITE_LABEL_FIELD = `metadata.labels["${SITE_LABEL}"]`;

/** A site name: a DNS label, as `spec.dhcp.site`. */
export const SITE_NAME = SITE;

/** Ironic of one site: its endpoint and references to its CA and credentials (files on the site worker, never their contents). */
export interface SiteIronic {
  url: string;
  /** CA bundle the site's Ironic is verified against (https only). */
  caFile?: string;
  clientCertFile?: string;
  clientKeyFile?: string;
  /** HTTP basic auth: the user, and a file holding the password. */
  username?: string;
  passwordFile?: string;
}

/** One site's dnsmasq folders (`<dir>` holds `hosts.d/` and `dnsmasq.leases`, as scripts/dnsmasq.sh lays them out), by `spec.dhcp.site`. */
export interface SiteDhcp {
  dirs: Record<string, string>;
  leaseSeconds?: number;
}

/** The site's image cache, served by its site worker (docs/images.md). */
export interface SiteImageCache {
  dir: string;
  host?: string;
  port?: number;
  url?: string;
  maxBytes?: number;
}

/**
 * Where the BMC credentials of a site's hosts are held (docs/sites.md, *Credentials*):
 * - `central` (the default): the central secret store (METALFLOW_SECRET_DIR, or the management
 *   cluster's Secrets), written by the API and Metal3 manifests as for the default site;
 * - `site`: only the site worker's own store; the central plane holds the Secret's name alone,
 *   the API refuses inline credentials for the site's hosts and nothing central reads them.
 */
export type SiteSecrets = 'central' | 'site';
export const SITE_SECRETS: readonly SiteSecrets[] = ['central', 'site'];

export interface Site {
  name: string;
  ironic: SiteIronic;
  /** Where its hosts' BMC credentials are held; absent: `central`. */
  secrets?: SiteSecrets;
  dhcp?: SiteDhcp;
  imageCache?: SiteImageCache;
  /** The task queue its site worker polls: `site/<name>`; the default site's is the main task queue. */
  taskQueue: string;
}

/** Whether the site's hosts' BMC credentials are held at the site only (`secrets: "site"`). */
export const holdsCredentials = (site: Pick<Site, 'secrets'> | undefined): boolean => site?.secrets === 'site';

/** The task queue of a site other than the default one. */
export const siteTaskQueue = (name: string): string => `site/${name}`;

/**
 * Where a host's hardware activities go: undefined for the default site (the
 * workflow's own task queue), else the site's queue. Only configured sites
 * reach a host (the API and the controller check `spec.site`), so the queue
 * follows from the name alone.
 */
export const hostSiteQueue = (site: string | undefined): string | undefined => (site && site !== DEFAULT_SITE ? siteTaskQueue(site) : undefined);

/** `spec.site` against the configured sites: a clear error naming the accepted ones. */
export function siteErrors(site: string | undefined, configured: readonly string[], field = 'spec.site'): FieldError[] {
  if (site === undefined || site === DEFAULT_SITE || configured.includes(site)) return [];
  const accepted = [DEFAULT_SITE, ...configured.filter((n) => n !== DEFAULT_SITE)].map((n) => `"${n}"`).join(', ');
  return [{ field, reason: `"${site}" is not a configured site; the sites are ${accepted} (the operator configures them in METALFLOW_SITES_FILE)` }];
}

/** The host's site as its provisioning state allows it to change: only while no Ironic node or operation of the old site holds the host. */
export const SITE_CHANGE_STATES = ['', 'unmanaged'] as const;
