/**
 * METALFLOW_SITES_FILE: the sites the operator configured (model/site.ts,
 * docs/sites.md), a JSON file read once at start by the worker, the API and
 * the controller. Beside them there is always the default site, made of the
 * environment's own settings (IRONIC_URL, its TLS and credentials, the DHCP
 * and image-cache variables) on the main task queue, so an install without
 * the file runs as it always has.
 *
 *   { "sites": [ { "name": "edge-1",
 *                  "ironic": { "url": "https://10.1.0.2:6385", "caFile": "/etc/metalflow/edge-1/ca.pem",
 *                              "username": "metalflow", "passwordFile": "/etc/metalflow/edge-1/ironic-password" },
 *                  "secrets": "site",
 *                  "dhcp": { "dirs": { "edge-1": "/var/lib/metalflow/dnsmasq/edge-1" }, "leaseSeconds": 3600 },
 *                  "imageCache": { "dir": "/var/cache/metalflow", "host": "10.1.0.3", "port": 8081 } } ],
 *     "centralTaskQueue": "metalflow-hosts" }
 *
 * `secrets` (optional): "central" (the default) or "site", where the site's hosts' BMC credentials are
 * held (model/site.ts SiteSecrets).
 *
 * `centralTaskQueue` (optional) is the central workers' METALFLOW_TASK_QUEUE:
 * a process given the file with another one stops at start, naming both.
 *
 * Files are named, never inlined: a password or key stays on the site
 * worker's disk and out of the file the central processes read.
 */
import { readFileSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { DEFAULT_SITE, SITE_NAME, SITE_SECRETS, siteTaskQueue, type Site, type SiteSecrets, type SiteDhcp, type SiteImageCache, type SiteIronic } from '../model/site';

export interface SiteRegistry {
  /** Every site, the default one first. */
  sites: Site[];
  /** The configured site of this name (the default one included), or undefined. */
  get(name: string): Site | undefined;
  /** Names of the configured sites, the default one first. */
  names(): string[];
  /** Names of the sites whose hosts' BMC credentials are held at the site only (`"secrets": "site"`). */
  credentialSites(): string[];
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function fail(where: string, what: string): never {
  throw new Error(`METALFLOW_SITES_FILE: ${where} ${what}`);
}

function onlyKeys(o: Json, where: string, keys: readonly string[]): void {
  for (const k of Object.keys(o)) if (!keys.includes(k)) fail(`${where}.${k}`, `is not a site setting (accepted: ${keys.join(', ')})`);
}

function text(o: Json, key: string, where: string, required: boolean): string | undefined {
  const v = o[key];
  if (v === undefined && !required) return undefined;
  if (typeof v !== 'string' || v === '') fail(`${where}.${key}`, 'must be a non-empty string');
  return v;
}

function path(o: Json, key: string, where: string, required = false): string | undefined {
  const v = text(o, key, where, required);
  if (v !== undefined && !isAbsolute(v)) fail(`${where}.${key}`, `must be an absolute path, got "${v}"`);
  return v;
}

function whole(o: Json, key: string, where: string, min: number, max: number): number | undefined {
  const v = o[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) fail(`${where}.${key}`, `must be a whole number from ${min} to ${max}`);
  return v;
}

function ironic(raw: unknown, where: string): SiteIronic {
  if (!isObject(raw)) fail(where, 'must be an object with the site\'s Ironic url');
  onlyKeys(raw, where, ['url', 'caFile', 'clientCertFile', 'clientKeyFile', 'username', 'passwordFile']);
  const url = text(raw, 'url', where, true)!;
  if (!/^https?:\/\/[^/?#]+\/?$/.test(url)) fail(`${where}.url`, `must be http(s)://host[:port], got "${url}"`);
  const caFile = path(raw, 'caFile', where);
  const clientCertFile = path(raw, 'clientCertFile', where);
  const clientKeyFile = path(raw, 'clientKeyFile', where);
  if ((clientCertFile === undefined) !== (clientKeyFile === undefined)) fail(where, 'needs clientCertFile and clientKeyFile together');
  if ((caFile || clientCertFile) && !url.startsWith('https://')) fail(`${where}.url`, `must be https:// when a CA or client certificate is given, got "${url}"`);
  const username = text(raw, 'username', where, false);
  const passwordFile = path(raw, 'passwordFile', where);
  if ((username === undefined) !== (passwordFile === undefined)) fail(where, 'needs username and passwordFile together (HTTP basic auth)');
  return { url, ...(caFile ? { caFile } : {}), ...(clientCertFile ? { clientCertFile, clientKeyFile } : {}), ...(username ? { username, passwordFile } : {}) };
}

/** `secrets`: where the site's hosts' BMC credentials are held; absent → central (docs/sites.md, *Credentials*). */
function secrets(raw: unknown, where: string): SiteSecrets | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string' || !(SITE_SECRETS as readonly string[]).includes(raw)) {
    fail(where, `must be "central" (the central secret store, the default) or "site" (BMC credentials only in the site worker's own store), got ${JSON.stringify(raw)}`);
  }
  return raw as SiteSecrets;
}

function dhcp(raw: unknown, where: string): SiteDhcp {
  if (!isObject(raw)) fail(where, 'must be an object: { "dirs": { "<dhcp site>": "<absolute dir>" } }');
  onlyKeys(raw, where, ['dirs', 'leaseSeconds']);
  if (!isObject(raw.dirs)) fail(`${where}.dirs`, 'must map DHCP site names (spec.dhcp.site) to absolute dnsmasq folders');
  const dirs: Record<string, string> = {};
  for (const [name, dir] of Object.entries(raw.dirs)) {
    if (!SITE_NAME.test(name)) fail(`${where}.dirs`, `"${name}" is not a DHCP site name (a DNS label)`);
    dirs[name] = path(raw.dirs, name, `${where}.dirs`, true)!;
  }
  const leaseSeconds = whole(raw, 'leaseSeconds', where, 120, 9_999_999);
  return { dirs, ...(leaseSeconds !== undefined ? { leaseSeconds } : {}) };
}

function imageCache(raw: unknown, where: string): SiteImageCache {
  if (!isObject(raw)) fail(where, 'must be an object with the cache\'s dir');
  onlyKeys(raw, where, ['dir', 'host', 'port', 'url', 'maxBytes']);
  const dir = path(raw, 'dir', where, true)!;
  const host = text(raw, 'host', where, false);
  const port = whole(raw, 'port', where, 1, 65_535);
  const url = text(raw, 'url', where, false);
  if (url !== undefined && !/^https?:\/\/[^/?#]+\/?$/.test(url)) fail(`${where}.url`, `must be http(s)://host[:port] with no path, got "${url}"`);
  const maxBytes = whole(raw, 'maxBytes', where, 1, Number.MAX_SAFE_INTEGER);
  return { dir, ...(host ? { host } : {}), ...(port !== undefined ? { port } : {}), ...(url ? { url } : {}), ...(maxBytes !== undefined ? { maxBytes } : {}) };
}

/**
 * The central task queue (METALFLOW_TASK_QUEUE) against the file: every process of these sites must use one
 * (a site worker starts its site's power sentinel there; the API and the controller start host workflows there,
 * whose hardware calls go to the sites). A site's own queue is no central queue.
 */
function checkCentralQueue(doc: Json, sites: readonly Site[], queue: string, setting: string): void {
  const named = text(doc, 'centralTaskQueue', '', false);
  if (named !== undefined && named !== queue) {
    throw new Error(
      `METALFLOW_SITES_FILE: centralTaskQueue is "${named}" but this process's ${setting}: every central worker, site worker, API and controller of these sites needs the same central task queue (a site worker starts its site's power sentinel on it, the API and the controller start host workflows on it); set METALFLOW_TASK_QUEUE=${named} here, or correct the file`,
    );
  }
  const site = sites.find((s) => s.name !== DEFAULT_SITE && s.taskQueue === queue);
  if (site) throw new Error(`METALFLOW_TASK_QUEUE "${queue}" is the task queue of site "${site.name}" (METALFLOW_SITES_FILE), not a central one: give every process the central workers' queue${named ? ` ("${named}")` : ''}`);
}

/**
 * Parses the file's content; `defaultSite` is the environment's own site, whose task queue is this process's
 * METALFLOW_TASK_QUEUE (`queueSetting`: how to name it in an error).
 */
export function parseSites(content: string, defaultSite: Site, queueSetting = `METALFLOW_TASK_QUEUE is "${defaultSite.taskQueue}"`): SiteRegistry {
  let doc: unknown;
  try {
    doc = JSON.parse(content);
  } catch (err) {
    fail('is not JSON:', err instanceof Error ? err.message : String(err));
  }
  if (!isObject(doc) || !Array.isArray(doc.sites)) fail('', 'must be a JSON object { "sites": [ ... ] }');
  onlyKeys(doc, '', ['sites', 'centralTaskQueue']);
  const sites: Site[] = [defaultSite];
  doc.sites.forEach((raw: unknown, i: number) => {
    const where = `sites[${i}]`;
    if (!isObject(raw)) fail(where, 'must be an object');
    onlyKeys(raw, where, ['name', 'ironic', 'secrets', 'dhcp', 'imageCache']);
    const name = text(raw, 'name', where, true)!;
    if (!SITE_NAME.test(name)) fail(`${where}.name`, `"${name}" is not a site name (lower-case letters, digits and '-', at most 63, starting and ending with a letter or digit)`);
    if (name === DEFAULT_SITE) fail(`${where}.name`, `"${DEFAULT_SITE}" is the environment's own site (IRONIC_URL and the rest); give the others other names`);
    if (sites.some((s) => s.name === name)) fail(`${where}.name`, `"${name}" is given twice`);
    sites.push({
      name,
      ironic: ironic(raw.ironic, `${where}.ironic`),
      ...(raw.secrets !== undefined ? { secrets: secrets(raw.secrets, `${where}.secrets`) } : {}),
      ...(raw.dhcp !== undefined ? { dhcp: dhcp(raw.dhcp, `${where}.dhcp`) } : {}),
      ...(raw.imageCache !== undefined ? { imageCache: imageCache(raw.imageCache, `${where}.imageCache`) } : {}),
      taskQueue: siteTaskQueue(name),
    });
  });
  checkCentralQueue(doc, sites, defaultSite.taskQueue, queueSetting);
  return registry(sites);
}

export function registry(sites: Site[]): SiteRegistry {
  return {
    sites,
    get: (name) => sites.find((s) => s.name === name),
    names: () => sites.map((s) => s.name),
    credentialSites: () => sites.filter((s) => s.secrets === 'site').map((s) => s.name),
  };
}

/** The default site and those of METALFLOW_SITES_FILE (none when unset). */
export function loadSites(env: NodeJS.ProcessEnv, defaults: { taskQueue: string; ironicUrl: string }): SiteRegistry {
  const defaultSite: Site = { name: DEFAULT_SITE, ironic: { url: defaults.ironicUrl }, taskQueue: defaults.taskQueue };
  const file = env.METALFLOW_SITES_FILE?.trim();
  if (!file) return registry([defaultSite]);
  let content: string;
  try {
    content = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`METALFLOW_SITES_FILE: cannot read ${file}: ${err instanceof Error ? err.message : String(err)}`);
  }
  const setting = env.METALFLOW_TASK_QUEUE === undefined ? `METALFLOW_TASK_QUEUE is unset, so "${defaults.taskQueue}"` : `METALFLOW_TASK_QUEUE is "${defaults.taskQueue}"`;
  return parseSites(content, defaultSite, setting);
}
