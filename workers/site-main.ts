/**
 * `npm run worker -- --site NAME`: the worker of one site of METALFLOW_SITES_FILE
 * (docs/sites.md). Its Ironic, DHCP folders and image cache are the site's
 * own; Temporal, the payload keys and the secret store are the environment's,
 * as for the central worker, except the BMC credentials of a site that holds
 * them itself (`"secrets": "site"`, site-secrets.ts).
 */
import type { Tracing } from '../clients/telemetry/tracing';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { temporalConnection, DEFAULT_IMAGE_CACHE_MAX_BYTES, type MetalflowConfig } from '../config/env';
import type { SiteRegistry } from '../config/sites';
import { DEFAULT_SITE, type Site } from '../model/site';
import { IronicClient } from '../clients/ironic/client';
import { readTlsFiles } from '../clients/tls/files';
import { LocalSecretStore, loadSecretKey } from '../clients/secrets/local-store';
import { KubernetesSecretReader } from '../clients/secrets/kube-store';
import { connectTemporalWorker } from '../clients/temporal/native-connection';
import { metalflowDataConverter } from '../clients/temporal/payload-keys';
import { addressPolicyFromEnv } from '../clients/images/address-policy';
import type { DhcpSite } from '../activities/dhcp/activities';
import { waitForIronic } from './ironic-ready';
import { startImageCache } from './image-cache';
import { createSiteWorker } from './site-worker';
import { kubernetesMode, peerSettings } from './process-deps';
import { startPowerSentinel, stopPowerSentinel } from './power-sentinel-start';
import { siteCredentialStore } from './site-secrets';

/** `--site NAME` or `--site=NAME` among the arguments; undefined when absent. */
export function siteArgument(argv: readonly string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--site') {
      const name = argv[i + 1];
      if (!name || name.startsWith('--')) throw new Error('--site needs a site name: npm run worker -- --site NAME');
      return name;
    }
    if (arg.startsWith('--site=')) return arg.slice('--site='.length);
  }
  return undefined;
}

/** The site of that name, or a clear refusal naming the configured ones. */
export function siteToServe(sites: SiteRegistry, name: string): Site {
  if (name === DEFAULT_SITE) throw new Error(`--site ${DEFAULT_SITE}: the default site is served by the central worker (npm run worker, no --site)`);
  const site = sites.get(name);
  const others = sites.names().filter((n) => n !== DEFAULT_SITE);
  if (!site) throw new Error(`--site ${name}: no such site in METALFLOW_SITES_FILE; its sites are ${others.length > 0 ? others.map((n) => `"${n}"`).join(', ') : 'none (is METALFLOW_SITES_FILE set?)'}`);
  return site;
}

export async function runSiteWorker(config: MetalflowConfig, site: Site, tracing?: Tracing): Promise<void> {
  const { ironic: ir } = site;
  const tls = ir.caFile || ir.clientCertFile ? readTlsFiles({ ...(ir.caFile ? { caFile: ir.caFile } : {}), ...(ir.clientCertFile ? { certFile: ir.clientCertFile, keyFile: ir.clientKeyFile } : {}) }) : undefined;
  // The password stays in its file on the site worker; only the file's name is configuration.
  const basicAuth = ir.username && ir.passwordFile ? { username: ir.username, password: readFileSync(ir.passwordFile, 'utf8').trim() } : undefined;
  const ironic = new IronicClient({ url: ir.url, basicAuth, ...(tls ? { tls } : {}) });
  await waitForIronic(ironic, { log: (line) => console.warn(`[site ${site.name}] ${line}`) });
  const dhcpSites: Record<string, DhcpSite> = Object.fromEntries(
    Object.entries(site.dhcp?.dirs ?? {}).map(([name, dir]) => [name, { hostsDir: join(dir, 'hosts.d'), leasesFile: join(dir, 'dnsmasq.leases'), leaseTimeSeconds: site.dhcp?.leaseSeconds ?? 3600 }]),
  );
  const cache = site.imageCache;
  const imageFetchPolicy = addressPolicyFromEnv(process.env, cache?.port !== undefined ? [cache.port] : []);
  const served = cache
    ? await startImageCache(
        {
          dir: cache.dir,
          maxBytes: cache.maxBytes ?? DEFAULT_IMAGE_CACHE_MAX_BYTES,
          host: cache.host ?? '127.0.0.1',
          port: cache.port ?? 8081,
          url: cache.url ?? `http://${(cache.host ?? '127.0.0.1').includes(':') ? `[${cache.host}]` : (cache.host ?? '127.0.0.1')}:${cache.port ?? 8081}`,
        },
        config.imageCaFile,
        imageFetchPolicy,
      )
    : undefined;
  const kubernetes = await kubernetesMode(config.kubeconfig);
  // `"secrets": "site"`: the hosts' BMC credentials from the site's own store, never the central one (site-secrets.ts).
  const credentials = await siteCredentialStore(site, process.env, kubernetes !== undefined);
  const connection = await connectTemporalWorker(temporalConnection(config));
  const worker = await createSiteWorker({
    connection,
    namespace: config.temporalNamespace,
    taskQueue: site.taskQueue,
    ironic,
    secrets: kubernetes ? new KubernetesSecretReader(kubernetes) : new LocalSecretStore(config.secretDir, loadSecretKey({ key: config.secretKey, keyFile: config.secretKeyFile, createIfMissing: false })),
    ...(credentials ? { bmcSecrets: credentials.reader } : {}),
    ...peerSettings(config),
    dhcpSites,
    ...(served ? { imageCache: served.imageCache, configDrives: served.configDrives } : {}),
    ...(kubernetes ? { kubernetes } : {}),
    imageFetchPolicy,
    dataConverter: metalflowDataConverter(config.payloadKeysFile),
    ...(tracing ? { tracing } : {}),
  });
  console.log(
    `metalflow site worker of site ${site.name} on task queue ${site.taskQueue} at ${config.temporalAddress}${config.temporalTls ? ' (TLS)' : ''}, Ironic ${ir.url}; central task queue ${config.taskQueue}; ` +
      `BMC credentials from ${credentials ? credentials.describe : 'the central secret store'}`,
  );
  // The site's power sentinel: its workflow on the central workers' queue (METALFLOW_TASK_QUEUE), its watch here.
  const sentinel = { connection: temporalConnection(config), namespace: config.temporalNamespace, taskQueue: config.taskQueue, site: site.name, dataConverter: metalflowDataConverter(config.payloadKeysFile) };
  if (config.powerSentinelSeconds > 0) {
    const id = await startPowerSentinel({ ...sentinel, intervalSeconds: config.powerSentinelSeconds });
    console.log(`[site ${site.name}] power sentinel ${id} (its workflow on task queue ${config.taskQueue}): the site's Ironic's nodes listed every ${config.powerSentinelSeconds} s`);
  } else if (await stopPowerSentinel(sentinel)) {
    console.log(`[site ${site.name}] power sentinel cancelled (METALFLOW_POWER_SENTINEL_SECONDS=0)`);
  }
  await worker.run();
  await connection.close();
}
