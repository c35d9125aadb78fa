/**
 * The activities that touch one site's hardware (docs/sites.md): its Ironic,
 * its BMCs (power, media, config drives), its DHCP servers and its image
 * cache. The central worker registers them for the default site beside the
 * host, fleet, pivot and remediation activities; a site worker
 * (`npm run worker -- --site NAME`) registers these alone, built from its
 * site's settings, on the site's task queue. The host workflow sends exactly
 * these to a host's site queue (workflows/host/site-route.ts, whose list
 * test/unit/sites.test.ts holds against this one).
 */
import { createIronicActivities, type IronicActivityDeps } from '../activities/ironic/activities';
import { createBmcActivities } from '../activities/bmc/activities';
import { createSettleActivities } from '../activities/ironic/settle';
import { createPowerActivities } from '../activities/power/activities';
import { createImageActivities } from '../activities/images/activities';
import { createImageCacheActivities, type ServedImageCache } from '../activities/images/cache';
import { createConfigDriveActivities, type ServedConfigDrives } from '../activities/images/config-drive';
import { createDhcpActivities, type DhcpSite } from '../activities/dhcp/activities';
import { addressPolicy, type AddressPolicy } from '../clients/images/address-policy';
import type { KubeRest } from '../clients/kubernetes/kube-rest';

export interface SiteActivityDeps extends IronicActivityDeps {
  bmcCa?: Buffer;
  imageCa?: Buffer;
  imageCache?: ServedImageCache;
  configDrives?: ServedConfigDrives;
  dhcpSites?: Record<string, DhcpSite>;
  imageFetchPolicy?: AddressPolicy;
  /** IPAM claims of DHCP reservations (Kubernetes mode). */
  kubernetes?: KubeRest;
}

export function createSiteActivities(deps: SiteActivityDeps) {
  const bmcSecrets = deps.bmcSecrets ? { bmcSecrets: deps.bmcSecrets } : {};
  const bmc = createBmcActivities({ secrets: deps.secrets, ...bmcSecrets, ...(deps.bmcCa ? { ca: deps.bmcCa } : {}) });
  // Never without a policy: a worker that was given none refuses loopback, link-local and the like.
  const imageHttp = { policy: deps.imageFetchPolicy ?? addressPolicy(), ...(deps.imageCa ? { ca: deps.imageCa } : {}) };
  return {
    ...createIronicActivities(deps),
    ...bmc,
    ...createPowerActivities({ ironic: deps.ironic, bmc, poll: deps.poll }),
    ...createSettleActivities({ ironic: deps.ironic, poll: deps.poll }),
    // Image probe and checksum files: 30 s per request.
    ...createImageActivities({ http: imageHttp }),
    // The image cache and the direct provisioner's whole-image check.
    ...createImageCacheActivities({ ...(deps.imageCache ? { cache: deps.imageCache } : {}), http: imageHttp }),
    // The direct provisioner's config drive in the BMC's USB slot.
    ...createConfigDriveActivities({ secrets: deps.secrets, ...bmcSecrets, ...(deps.bmcCa ? { ca: deps.bmcCa } : {}), ...(deps.configDrives ? { drives: deps.configDrives } : {}) }),
    // DHCP reservations in each of the site's dnsmasq hosts dirs (docs/dhcp-and-ipam.md).
    ...createDhcpActivities({ sites: deps.dhcpSites ?? {}, ...(deps.kubernetes ? { kube: deps.kubernetes } : {}) }),
  };
}
