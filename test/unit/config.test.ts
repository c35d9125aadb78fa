/** Settings from the environment: accepted values pass through, bad ones name the variable. */
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, temporalConnection } from '../../config/env';
import { temporalConnectionOptions } from '../../clients/temporal/connection';
import { ironicDriverInfo } from '../../clients/ironic/driver-info';
import { parseBmcAddress } from '../../model/bmc';

describe('worker tuning from the environment', () => {
  it('leaves the SDK defaults alone when nothing is set', () => {
    expect(loadConfig({}).workerTuning).toEqual({});
  });

  it('reads every knob', () => {
    const t = loadConfig({
      METALFLOW_WORKER_MAX_CACHED_WORKFLOWS: '0',
      METALFLOW_WORKER_WORKFLOW_TASKS: '80',
      METALFLOW_WORKER_ACTIVITY_TASKS: '200',
      METALFLOW_WORKER_WORKFLOW_POLLERS: '30',
      METALFLOW_WORKER_ACTIVITY_POLLERS: '4',
      METALFLOW_WORKER_NONSTICKY_POLL_RATIO: '0.25',
      METALFLOW_WORKER_WORKFLOW_THREADS: '2',
    }).workerTuning;
    expect(t).toEqual({
      maxCachedWorkflows: 0,
      maxConcurrentWorkflowTaskExecutions: 80,
      maxConcurrentActivityTaskExecutions: 200,
      maxConcurrentWorkflowTaskPolls: 30,
      maxConcurrentActivityTaskPolls: 4,
      nonStickyToStickyPollRatio: 0.25,
      workflowThreadPoolSize: 2,
    });
  });

  it.each([
    ['METALFLOW_WORKER_WORKFLOW_POLLERS', '1', /METALFLOW_WORKER_WORKFLOW_POLLERS must be an integer >= 2, got "1"/],
    ['METALFLOW_WORKER_WORKFLOW_TASKS', '0', /METALFLOW_WORKER_WORKFLOW_TASKS must be an integer >= 1/],
    ['METALFLOW_WORKER_WORKFLOW_THREADS', '0', /METALFLOW_WORKER_WORKFLOW_THREADS must be an integer >= 1/],
    ['METALFLOW_WORKER_MAX_CACHED_WORKFLOWS', 'lots', /METALFLOW_WORKER_MAX_CACHED_WORKFLOWS must be an integer >= 0, got "lots"/],
    ['METALFLOW_WORKER_NONSTICKY_POLL_RATIO', '1.5', /METALFLOW_WORKER_NONSTICKY_POLL_RATIO must be a number in \(0, 1\], got "1.5"/],
  ])('rejects %s=%s, naming the variable', (name, value, message) => {
    expect(() => loadConfig({ [name]: value })).toThrow(message);
  });
});

describe('host workflow options from the environment', () => {
  it('reads the power check interval and soft power off timeout, leaving unset ones to the workflow defaults', () => {
    // With the power sentinel on (the default) a host on an Ironic node checks only as a backstop.
    expect(loadConfig({}).hostOptions).toEqual({ watchedPowerCheckSeconds: 1800 });
    expect(loadConfig({ METALFLOW_POWER_SENTINEL_SECONDS: '0' }).hostOptions).toEqual({});
    expect(loadConfig({ METALFLOW_POWER_CHECK_SECONDS: '0', METALFLOW_SOFT_POWER_OFF_SECONDS: '60' }).hostOptions).toEqual({
      powerCheckSeconds: 0,
      watchedPowerCheckSeconds: 1800,
      softPowerOffSeconds: 60,
    });
    expect(() => loadConfig({ METALFLOW_SOFT_POWER_OFF_SECONDS: '0' })).toThrow(/METALFLOW_SOFT_POWER_OFF_SECONDS must be whole seconds from 1 to 86400, got "0"/);
    expect(() => loadConfig({ METALFLOW_POWER_CHECK_SECONDS: '5m' })).toThrow(/METALFLOW_POWER_CHECK_SECONDS must be whole seconds from 0 to 86400, got "5m"/);
  });

  it('runs the power sentinel every 30 s unless set; 0 turns it off and the hosts check every powerCheckSeconds again', () => {
    expect(loadConfig({}).powerSentinelSeconds).toBe(30);
    expect(loadConfig({ METALFLOW_POWER_SENTINEL_SECONDS: '10' })).toMatchObject({ powerSentinelSeconds: 10, hostOptions: { watchedPowerCheckSeconds: 1800 } });
    expect(loadConfig({ METALFLOW_POWER_SENTINEL_SECONDS: '0' }).powerSentinelSeconds).toBe(0);
    // A backstop set by hand wins, with the sentinel on or off.
    expect(loadConfig({ METALFLOW_WATCHED_POWER_CHECK_SECONDS: '600' }).hostOptions).toEqual({ watchedPowerCheckSeconds: 600 });
    expect(loadConfig({ METALFLOW_POWER_SENTINEL_SECONDS: '0', METALFLOW_WATCHED_POWER_CHECK_SECONDS: '600' }).hostOptions).toEqual({ watchedPowerCheckSeconds: 600 });
    expect(() => loadConfig({ METALFLOW_POWER_SENTINEL_SECONDS: '-1' })).toThrow(/METALFLOW_POWER_SENTINEL_SECONDS must be whole seconds from 0 to 86400, got "-1"/);
  });

  it('reads the continue-as-new threshold, refusing values outside 20..10240 events', () => {
    expect(loadConfig({ METALFLOW_MAX_HISTORY_EVENTS: '60' }).hostOptions).toMatchObject({ maxHistoryEvents: 60 });
    expect(loadConfig({ METALFLOW_PROBE_IMAGES: '1' }).hostOptions).toMatchObject({ probeImages: true });
    expect(loadConfig({ METALFLOW_PROBE_IMAGES: '0' }).hostOptions).toMatchObject({ probeImages: false });
    expect(loadConfig({ METALFLOW_CACHE_IMAGES: '1' }).hostOptions).toMatchObject({ cacheImages: true });
    expect(() => loadConfig({ METALFLOW_CACHE_IMAGES: 'yes' })).toThrow(/METALFLOW_CACHE_IMAGES must be 0 or 1, got "yes"/);
  });

  it('reads the image cache: off unless METALFLOW_IMAGE_CACHE_DIR, served on loopback by default', () => {
    expect(loadConfig({}).imageCache).toBeUndefined();
    expect(loadConfig({ METALFLOW_IMAGE_CACHE_DIR: '/var/cache/mf' }).imageCache).toEqual({
      dir: '/var/cache/mf',
      maxBytes: 20 * 2 ** 30,
      host: '127.0.0.1',
      port: 8081,
      url: 'http://127.0.0.1:8081',
    });
    const site = { METALFLOW_IMAGE_CACHE_DIR: '/c', METALFLOW_IMAGE_CACHE_HOST: '0.0.0.0', METALFLOW_IMAGE_CACHE_PORT: '9000', METALFLOW_IMAGE_CACHE_URL: 'http://10.0.0.5:9000' };
    expect(loadConfig({ ...site, METALFLOW_IMAGE_CACHE_MAX_BYTES: '1000' }).imageCache).toEqual({ dir: '/c', maxBytes: 1000, host: '0.0.0.0', port: 9000, url: 'http://10.0.0.5:9000' });
    expect(() => loadConfig({ ...site, METALFLOW_IMAGE_CACHE_URL: 'http://10.0.0.5:9000/cache' })).toThrow(/METALFLOW_IMAGE_CACHE_URL must be http\(s\):\/\/host\[:port\] with no path/);
    expect(() => loadConfig({ ...site, METALFLOW_IMAGE_CACHE_MAX_BYTES: '0' })).toThrow(/METALFLOW_IMAGE_CACHE_MAX_BYTES/);
    // The cache per site: a site's cache worker, and the sites host workflows send there.
    expect(loadConfig({ ...site, METALFLOW_IMAGE_CACHE_SITE: 'site-a' }).imageCache?.site).toBe('site-a');
    expect(() => loadConfig({ ...site, METALFLOW_IMAGE_CACHE_SITE: 'a,b' })).toThrow('METALFLOW_IMAGE_CACHE_SITE names one site, got "a,b"');
    expect(() => loadConfig({ ...site, METALFLOW_IMAGE_CACHE_SITE: 'Site_A' })).toThrow('METALFLOW_IMAGE_CACHE_SITE: "Site_A" is not a site name');
    expect(() => loadConfig({ METALFLOW_IMAGE_CACHE_SITE: 'site-a' })).toThrow('METALFLOW_IMAGE_CACHE_SITE needs METALFLOW_IMAGE_CACHE_DIR');
    expect(loadConfig({ METALFLOW_IMAGE_CACHE_SITES: 'site-a, site-b,site-a' }).hostOptions.imageCacheSites).toEqual(['site-a', 'site-b']);
    expect(loadConfig({}).hostOptions.imageCacheSites).toBeUndefined();
    expect(() => loadConfig({ METALFLOW_IMAGE_CACHE_SITES: 'a,b c' })).toThrow('METALFLOW_IMAGE_CACHE_SITES: "b c" is not a site name');
    for (const bad of ['19', '10241', '4e3x', '100.5']) {
      expect(() => loadConfig({ METALFLOW_MAX_HISTORY_EVENTS: bad })).toThrow(
        `METALFLOW_MAX_HISTORY_EVENTS must be a whole number of events from 20 to 10240, got "${bad}"`,
      );
    }
  });

  it('reads how long an API change waits for Temporal: 60 s unless set, at least 1 s', () => {
    expect(loadConfig({}).apiUpdateTimeoutSeconds).toBe(60);
    expect(loadConfig({ METALFLOW_API_UPDATE_TIMEOUT_SECONDS: '5' }).apiUpdateTimeoutSeconds).toBe(5);
    for (const bad of ['0', '-1', '1.5', 'soon']) {
      expect(() => loadConfig({ METALFLOW_API_UPDATE_TIMEOUT_SECONDS: bad })).toThrow(
        `METALFLOW_API_UPDATE_TIMEOUT_SECONDS must be whole seconds from 1 to 86400, got "${bad}"`,
      );
    }
  });

  it("reads the provisioning limit: Metal3's 20 unless set, 0 for none, a whole number", () => {
    expect(loadConfig({}).provisioningLimit).toBe(20);
    expect(loadConfig({ METALFLOW_PROVISIONING_LIMIT: '0' }).provisioningLimit).toBe(0);
    expect(loadConfig({ METALFLOW_PROVISIONING_LIMIT: '5' }).provisioningLimit).toBe(5);
    for (const bad of ['-1', '2.5', 'many']) {
      expect(() => loadConfig({ METALFLOW_PROVISIONING_LIMIT: bad })).toThrow(
        `METALFLOW_PROVISIONING_LIMIT must be a whole number of hosts from 0 (no limit) to 100000, got "${bad}"`,
      );
    }
  });

  it('reads the controller settings, refusing a concurrency or timeout it could not use', () => {
    expect(loadConfig({}).controller).toEqual({ leaseNamespace: 'default', leaseSeconds: 15, concurrency: 64, reconcileTimeoutSeconds: 60, endedScanSeconds: 30, statusScanSeconds: 60, resyncSeconds: 600, remediationCapm3: false, nodeHealthSeconds: 60, firmwareResyncSeconds: 1800, bmoCheck: true });
    expect(loadConfig({ METALFLOW_CONTROLLER_NODE_HEALTH_SECONDS: '0' }).controller.nodeHealthSeconds).toBe(0);
    expect(() => loadConfig({ METALFLOW_CONTROLLER_NODE_HEALTH_SECONDS: 'often' })).toThrow(
      'METALFLOW_CONTROLLER_NODE_HEALTH_SECONDS must be a whole number of seconds from 0 (off) to 86400, got "often"',
    );
    expect(
      loadConfig({
        METALFLOW_WATCH_NAMESPACE: 'racks',
        METALFLOW_CONTROLLER_CONCURRENCY: '4',
        METALFLOW_CONTROLLER_RECONCILE_TIMEOUT_SECONDS: '5',
        METALFLOW_LEASE_SECONDS: '4',
      }).controller,
    ).toMatchObject({ watchNamespaces: ['racks'], concurrency: 4, reconcileTimeoutSeconds: 5, leaseSeconds: 4 });
    // Unset or empty: every namespace, as BMO without WATCH_NAMESPACE; a list: those (one informer each).
    expect(loadConfig({ METALFLOW_WATCH_NAMESPACE: '' }).controller.watchNamespaces).toBeUndefined();
    expect(loadConfig({ METALFLOW_WATCH_NAMESPACE: ' racks-a, racks-b ,racks-a' }).controller.watchNamespaces).toEqual(['racks-a', 'racks-b']);
    for (const bad of ['racks,', 'Racks', 'racks b', 'a'.repeat(64)]) {
      expect(() => loadConfig({ METALFLOW_WATCH_NAMESPACE: bad })).toThrow(/^METALFLOW_WATCH_NAMESPACE must be empty \(every namespace\) or namespaces separated by commas/);
    }
    // Number('sixteen') would be NaN: a queue that never runs anything, with no error.
    for (const bad of ['0', 'sixteen', '2.5', '10001']) {
      expect(() => loadConfig({ METALFLOW_CONTROLLER_CONCURRENCY: bad })).toThrow(
        `METALFLOW_CONTROLLER_CONCURRENCY must be a whole number from 1 to 10000, got "${bad}"`,
      );
    }
    for (const bad of ['0', 'soon']) {
      expect(() => loadConfig({ METALFLOW_CONTROLLER_RECONCILE_TIMEOUT_SECONDS: bad })).toThrow(
        `METALFLOW_CONTROLLER_RECONCILE_TIMEOUT_SECONDS must be whole seconds from 1 to 86400, got "${bad}"`,
      );
    }
    expect(() => loadConfig({ METALFLOW_LEASE_SECONDS: '1' })).toThrow('METALFLOW_LEASE_SECONDS must be whole seconds from 2 to 86400, got "1"');
  });
});

describe('TLS settings from the environment', () => {
  const dir = mkdtempSync(join(tmpdir(), 'metalflow-tls-config-'));
  const pem = (name: string, body = `-----BEGIN CERTIFICATE-----\n${name}\n-----END CERTIFICATE-----\n`): string => {
    const path = join(dir, name);
    writeFileSync(path, body);
    return path;
  };
  const ca = pem('ca.crt');
  const cert = pem('client.crt');
  const key = pem('client.key');
  const missing = join(dir, 'nope.pem');

  it('nothing set: plain Temporal, no Ironic or BMC TLS settings', () => {
    const c = loadConfig({});
    expect(c.temporalTls).toBeUndefined();
    expect(c.temporalApiKey).toBeUndefined();
    expect(c.ironicTls).toBeUndefined();
    expect(c.bmcCaFile).toBeUndefined();
    expect(c.ironicRedfishVerifyCa).toBeUndefined();
    expect(temporalConnectionOptions(temporalConnection(c))).toEqual({ address: '127.0.0.1:7233', tls: false });
  });

  it('Temporal over mTLS, with Temporal\'s variable names, builds the SDK options from the files', () => {
    const c = loadConfig({
      TEMPORAL_ADDRESS: 'temporal.example:7233',
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: ca,
      TEMPORAL_TLS_CLIENT_CERT_PATH: cert,
      TEMPORAL_TLS_CLIENT_KEY_PATH: key,
      TEMPORAL_TLS_SERVER_NAME: 'frontend.temporal.internal',
    });
    expect(c.temporalTls).toEqual({ caFile: ca, certFile: cert, keyFile: key, serverName: 'frontend.temporal.internal' });
    const opts = temporalConnectionOptions(temporalConnection(c));
    expect(opts.address).toBe('temporal.example:7233');
    expect(opts.tls).not.toBe(false);
    const tls = opts.tls as Exclude<typeof opts.tls, false>;
    expect(Buffer.from(tls.serverRootCACertificate!).toString()).toContain('ca.crt');
    expect(Buffer.from(tls.clientCertPair!.crt).toString()).toContain('client.crt');
    expect(Buffer.from(tls.clientCertPair!.key).toString()).toContain('client.key');
    expect(tls.serverNameOverride).toBe('frontend.temporal.internal');
    expect(opts.apiKey).toBeUndefined();
  });

  it('TEMPORAL_TLS=true alone: TLS against the system CAs; an API key turns TLS on unless TEMPORAL_TLS=false', () => {
    expect(loadConfig({ TEMPORAL_TLS: 'true' }).temporalTls).toEqual({});
    expect(temporalConnectionOptions(temporalConnection(loadConfig({ TEMPORAL_TLS: 'TRUE' })))).toEqual({ address: '127.0.0.1:7233', tls: {} });
    const cloud = loadConfig({ TEMPORAL_API_KEY: 'k-123' });
    expect(cloud.temporalTls).toEqual({});
    expect(temporalConnectionOptions(temporalConnection(cloud))).toEqual({ address: '127.0.0.1:7233', tls: {}, apiKey: 'k-123' });
    const plainKey = loadConfig({ TEMPORAL_API_KEY: 'k-123', TEMPORAL_TLS: 'false' });
    expect(plainKey.temporalTls).toBeUndefined();
    // Explicit: the SDK would otherwise turn TLS on for an API key.
    expect(temporalConnectionOptions(temporalConnection(plainKey))).toEqual({ address: '127.0.0.1:7233', tls: false, apiKey: 'k-123' });
  });

  it.each([
    [{ TEMPORAL_TLS_SERVER_CA_CERT_PATH: missing }, `TEMPORAL_TLS_SERVER_CA_CERT_PATH: no such file: ${missing}`],
    [{ TEMPORAL_TLS_SERVER_CA_CERT_PATH: dir }, `TEMPORAL_TLS_SERVER_CA_CERT_PATH: ${dir} is not a file`],
    [{ TEMPORAL_TLS_CLIENT_CERT_PATH: cert }, 'TEMPORAL_TLS_CLIENT_CERT_PATH is set but TEMPORAL_TLS_CLIENT_KEY_PATH is not: a client certificate needs its private key'],
    [{ TEMPORAL_TLS_CLIENT_KEY_PATH: key }, 'TEMPORAL_TLS_CLIENT_KEY_PATH is set but TEMPORAL_TLS_CLIENT_CERT_PATH is not'],
    [{ TEMPORAL_TLS_CLIENT_CERT_PATH: cert, TEMPORAL_TLS_CLIENT_KEY_PATH: missing }, `TEMPORAL_TLS_CLIENT_KEY_PATH: no such file: ${missing}`],
    [{ TEMPORAL_TLS: 'yes' }, 'TEMPORAL_TLS must be "true" or "false", got "yes"'],
    [{ TEMPORAL_TLS: 'false', TEMPORAL_TLS_SERVER_CA_CERT_PATH: ca }, 'TEMPORAL_TLS=false contradicts TEMPORAL_TLS_SERVER_CA_CERT_PATH'],
    [{ TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: 'true' }, 'TEMPORAL_TLS_DISABLE_HOST_VERIFICATION=true is not supported'],
    [{ TEMPORAL_TLS_SERVER_CA_CERT_DATA: '-----BEGIN' }, 'TEMPORAL_TLS_SERVER_CA_CERT_DATA is not supported by metalflow: give the CA as a file in TEMPORAL_TLS_SERVER_CA_CERT_PATH'],
    [{ IRONIC_URL: 'https://ironic:6385', IRONIC_CACERT_FILE: missing }, `IRONIC_CACERT_FILE: no such file: ${missing}`],
    [{ IRONIC_URL: 'https://ironic:6385', IRONIC_CLIENT_CERT_FILE: cert }, 'IRONIC_CLIENT_CERT_FILE is set but IRONIC_CLIENT_PRIVATE_KEY_FILE is not'],
    [{ IRONIC_URL: 'http://ironic:6385', IRONIC_CACERT_FILE: ca }, 'IRONIC_CACERT_FILE is set but IRONIC_URL (http://ironic:6385) is not https://'],
    [{ IRONIC_CACERT_FILE: ca }, 'IRONIC_CACERT_FILE is set but IRONIC_URL (unset: http://127.0.0.1:6385) is not https://'],
    [{ METALFLOW_BMC_CACERT_FILE: missing }, `METALFLOW_BMC_CACERT_FILE: no such file: ${missing}`],
    [{ METALFLOW_IMAGE_CACERT_FILE: missing }, `METALFLOW_IMAGE_CACERT_FILE: no such file: ${missing}`],
    [{ METALFLOW_PROBE_IMAGES: 'yes' }, 'METALFLOW_PROBE_IMAGES must be 0 or 1, got "yes"'],
    [{ METALFLOW_IRONIC_REDFISH_VERIFY_CA: 'certs/bmc.pem' }, 'METALFLOW_IRONIC_REDFISH_VERIFY_CA must be an absolute path on the Ironic conductor'],
  ])('refuses %o', (env, message) => {
    expect(() => loadConfig(env)).toThrow(message);
  });

  it('a file this process cannot read is refused by name', () => {
    if (process.getuid?.() === 0) return; // root reads anything
    const locked = pem('locked.pem');
    chmodSync(locked, 0);
    expect(() => loadConfig({ METALFLOW_BMC_CACERT_FILE: locked })).toThrow(`METALFLOW_BMC_CACERT_FILE: ${locked} cannot be read by this process`);
  });

  it('Ironic over HTTPS (BMO\'s names) and the BMC CA settings pass through', () => {
    const c = loadConfig({
      IRONIC_URL: 'https://ironic.example:6385',
      IRONIC_CACERT_FILE: ca,
      IRONIC_CLIENT_CERT_FILE: cert,
      IRONIC_CLIENT_PRIVATE_KEY_FILE: key,
      METALFLOW_BMC_CACERT_FILE: ca,
      METALFLOW_IMAGE_CACERT_FILE: ca,
      // Not checked here: it is a path on the conductor (a file or a folder, as Ironic accepts).
      METALFLOW_IRONIC_REDFISH_VERIFY_CA: '/etc/ironic/bmc-ca.pem',
    });
    expect(c.ironicTls).toEqual({ caFile: ca, certFile: cert, keyFile: key });
    expect(c.bmcCaFile).toBe(ca);
    expect(c.imageCaFile).toBe(ca);
    expect(c.ironicRedfishVerifyCa).toBe('/etc/ironic/bmc-ca.pem');
  });

  it('redfish_verify_ca in driver_info: the conductor path for https Redfish, false when verification is disabled, absent otherwise', () => {
    const creds = { username: 'admin', password: 'pw' };
    const https = parseBmcAddress('redfish://10.0.0.5/redfish/v1/Systems/1');
    const http = parseBmcAddress('redfish+http://10.0.0.5/redfish/v1/Systems/1');
    const idrac = parseBmcAddress('idrac-virtualmedia://10.0.0.7/redfish/v1/Systems/System.Embedded.1');
    const ipmi = parseBmcAddress('ipmi://10.0.0.6');
    if (!https.ok || !http.ok || !idrac.ok || !ipmi.ok) throw new Error('test addresses must parse');
    const path = '/etc/ironic/bmc-ca.pem';
    expect(ironicDriverInfo(https.value, creds, { redfishVerifyCa: path }).redfish_verify_ca).toBe(path);
    expect(ironicDriverInfo(idrac.value, creds, { redfishVerifyCa: path }).redfish_verify_ca).toBe(path);
    expect(ironicDriverInfo(https.value, creds, { redfishVerifyCa: path, disableCertificateVerification: true }).redfish_verify_ca).toBe(false);
    expect(ironicDriverInfo(https.value, creds, {})).not.toHaveProperty('redfish_verify_ca');
    expect(ironicDriverInfo(http.value, creds, { redfishVerifyCa: path })).not.toHaveProperty('redfish_verify_ca');
    expect(ironicDriverInfo(ipmi.value, creds, { redfishVerifyCa: path })).not.toHaveProperty('redfish_verify_ca');
  });
});
