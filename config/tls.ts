/**
 * TLS settings of metalflow's peers, from the environment, validated at start
 * so a missing file or half a key pair stops the process with the variable
 * and the path named. The names follow the peers' own conventions: Temporal's
 * client environment configuration (`TEMPORAL_TLS_*`, `TEMPORAL_API_KEY`, as
 * the `temporal` CLI and the SDKs read them), Metal3's Bare Metal Operator for
 * Ironic (`IRONIC_CACERT_FILE`, `IRONIC_CLIENT_CERT_FILE`,
 * `IRONIC_CLIENT_PRIVATE_KEY_FILE`) and Ironic's `redfish_verify_ca` for BMCs.
 */
import { accessSync, constants, statSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import type { TemporalTls } from '../clients/temporal/connection';
import type { TlsFiles } from '../clients/tls/files';

export type { TemporalConnectionSettings, TemporalTls } from '../clients/temporal/connection';
export type { TlsFiles } from '../clients/tls/files';

export interface TlsConfig {
  temporalTls?: TemporalTls;
  temporalApiKey?: string;
  /** Ironic's API over HTTPS: its CA bundle, and a client certificate when Ironic's proxy asks for one. */
  ironicTls?: TlsFiles;
  /** CA bundle metalflow's own Redfish client trusts (pre-flight, fast inspection, the direct provisioner). */
  bmcCaFile?: string;
  /** CA bundle the image check trusts for https image and checksum-file URLs (docs/images.md). */
  imageCaFile?: string;
  /** `driver_info.redfish_verify_ca` of Redfish nodes: a CA bundle path on the Ironic conductor. */
  ironicRedfishVerifyCa?: string;
}

/**
 * Every variable read here. A process pointed at the project's own plain
 * stack (the bench's children) is given them empty, so an operator's settings
 * for a real Temporal or Ironic in the same shell do not leak into it.
 */
export const TLS_ENV_NAMES = [
  'TEMPORAL_TLS',
  'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
  'TEMPORAL_TLS_CLIENT_CERT_PATH',
  'TEMPORAL_TLS_CLIENT_KEY_PATH',
  'TEMPORAL_TLS_SERVER_NAME',
  'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION',
  'TEMPORAL_TLS_SERVER_CA_CERT_DATA',
  'TEMPORAL_TLS_CLIENT_CERT_DATA',
  'TEMPORAL_TLS_CLIENT_KEY_DATA',
  'TEMPORAL_API_KEY',
  'IRONIC_CACERT_FILE',
  'IRONIC_CLIENT_CERT_FILE',
  'IRONIC_CLIENT_PRIVATE_KEY_FILE',
  'METALFLOW_BMC_CACERT_FILE',
  'METALFLOW_IMAGE_CACERT_FILE',
  'METALFLOW_IRONIC_REDFISH_VERIFY_CA',
] as const;

type Env = NodeJS.ProcessEnv;

const set = (env: Env, name: string): string | undefined => (env[name] === undefined || env[name] === '' ? undefined : env[name]);

/** A readable regular file, or an error naming the variable and the path. */
function pemFile(env: Env, name: string): string | undefined {
  const path = set(env, name);
  if (path === undefined) return undefined;
  let isFile: boolean;
  try {
    isFile = statSync(path).isFile();
  } catch {
    throw new Error(`${name}: no such file: ${path}`);
  }
  if (!isFile) throw new Error(`${name}: ${path} is not a file (give the PEM file itself)`);
  try {
    accessSync(path, constants.R_OK);
  } catch {
    throw new Error(`${name}: ${path} cannot be read by this process`);
  }
  return path;
}

/** The object without its undefined entries (so `Object.keys` lists what was given). */
function defined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

/** A client certificate and its key: both or neither. */
function certificatePair(env: Env, certName: string, keyName: string): Pick<TlsFiles, 'certFile' | 'keyFile'> {
  const certFile = pemFile(env, certName);
  const keyFile = pemFile(env, keyName);
  if (certFile && !keyFile) throw new Error(`${certName} is set but ${keyName} is not: a client certificate needs its private key`);
  if (keyFile && !certFile) throw new Error(`${keyName} is set but ${certName} is not: a private key needs its client certificate`);
  return { certFile, keyFile };
}

function bool(env: Env, name: string): boolean | undefined {
  const raw = set(env, name);
  if (raw === undefined) return undefined;
  if (/^true$/i.test(raw)) return true;
  if (/^false$/i.test(raw)) return false;
  throw new Error(`${name} must be "true" or "false", got "${raw}"`);
}

/** Temporal's conventions the TypeScript SDK cannot honour: refused rather than silently ignored. */
const TEMPORAL_UNSUPPORTED: Record<string, string> = {
  TEMPORAL_TLS_SERVER_CA_CERT_DATA: 'give the CA as a file in TEMPORAL_TLS_SERVER_CA_CERT_PATH',
  TEMPORAL_TLS_CLIENT_CERT_DATA: 'give the certificate as a file in TEMPORAL_TLS_CLIENT_CERT_PATH',
  TEMPORAL_TLS_CLIENT_KEY_DATA: 'give the key as a file in TEMPORAL_TLS_CLIENT_KEY_PATH',
};

function temporal(env: Env): Pick<TlsConfig, 'temporalTls' | 'temporalApiKey'> {
  for (const [name, instead] of Object.entries(TEMPORAL_UNSUPPORTED)) {
    if (set(env, name) !== undefined) throw new Error(`${name} is not supported by metalflow: ${instead}`);
  }
  if (bool(env, 'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION')) {
    throw new Error(
      'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION=true is not supported (the TypeScript SDK always verifies the server name): set TEMPORAL_TLS_SERVER_NAME to the name in the server certificate',
    );
  }
  const enabled = bool(env, 'TEMPORAL_TLS');
  const files: TemporalTls = defined({
    caFile: pemFile(env, 'TEMPORAL_TLS_SERVER_CA_CERT_PATH'),
    ...certificatePair(env, 'TEMPORAL_TLS_CLIENT_CERT_PATH', 'TEMPORAL_TLS_CLIENT_KEY_PATH'),
    serverName: set(env, 'TEMPORAL_TLS_SERVER_NAME'),
  });
  const apiKey = set(env, 'TEMPORAL_API_KEY');
  const given = Object.keys(files);
  if (enabled === false && given.length > 0) {
    const names = { caFile: 'TEMPORAL_TLS_SERVER_CA_CERT_PATH', certFile: 'TEMPORAL_TLS_CLIENT_CERT_PATH', keyFile: 'TEMPORAL_TLS_CLIENT_KEY_PATH', serverName: 'TEMPORAL_TLS_SERVER_NAME' };
    throw new Error(`TEMPORAL_TLS=false contradicts ${given.map((k) => names[k as keyof typeof names]).join(', ')}: remove one or the other`);
  }
  // As Temporal's own clients do: TLS when asked, when any TLS file is given, or with an API key unless TEMPORAL_TLS=false.
  const tls = enabled ?? (given.length > 0 || apiKey !== undefined);
  return defined({ temporalTls: tls ? files : undefined, temporalApiKey: apiKey });
}

function ironic(env: Env): Pick<TlsConfig, 'ironicTls'> {
  const files: TlsFiles = defined({ caFile: pemFile(env, 'IRONIC_CACERT_FILE'), ...certificatePair(env, 'IRONIC_CLIENT_CERT_FILE', 'IRONIC_CLIENT_PRIVATE_KEY_FILE') });
  if (Object.keys(files).length === 0) return {};
  const url = env.IRONIC_URL ?? '';
  if (!/^https:\/\//i.test(url)) {
    const which = files.caFile ? 'IRONIC_CACERT_FILE' : 'IRONIC_CLIENT_CERT_FILE';
    throw new Error(`${which} is set but IRONIC_URL (${url || 'unset: http://127.0.0.1:6385'}) is not https://: TLS settings need an https Ironic URL`);
  }
  return { ironicTls: files };
}

function bmc(env: Env): Pick<TlsConfig, 'bmcCaFile' | 'ironicRedfishVerifyCa' | 'imageCaFile'> {
  const bmcCaFile = pemFile(env, 'METALFLOW_BMC_CACERT_FILE');
  const imageCaFile = pemFile(env, 'METALFLOW_IMAGE_CACERT_FILE');
  const verifyCa = set(env, 'METALFLOW_IRONIC_REDFISH_VERIFY_CA');
  // A path on the conductor, which may be another machine: only its form can be checked here.
  if (verifyCa !== undefined && !isAbsolute(verifyCa)) {
    throw new Error(`METALFLOW_IRONIC_REDFISH_VERIFY_CA must be an absolute path on the Ironic conductor (a CA bundle file or folder), got "${verifyCa}"`);
  }
  return defined({ bmcCaFile, imageCaFile, ironicRedfishVerifyCa: verifyCa });
}

export function loadTlsConfig(env: Env): TlsConfig {
  return { ...temporal(env), ...ironic(env), ...bmc(env) };
}
