/**
 * TLS to Ironic and to Redfish BMCs, against real peers serving HTTPS with a
 * certificate the test makes with openssl: sushy-tools and Ironic started by
 * scripts/stack.sh with TLS (Ironic's own `[api] enable_ssl_api`), and for
 * mutual TLS a proxy that requires client certificates in front of that
 * Ironic (Ironic's server cannot ask for them). Shown: metalflow's Redfish
 * client and BMC activities with the CA bundle (and without it, a `tls` error
 * that names the setting; `disableCertificateVerification` still works); the
 * Ironic client from IRONIC_CACERT_FILE and a client certificate; and Ironic's
 * conductor reading the HTTPS BMC with the `redfish_verify_ca` path metalflow
 * puts on the node.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApplicationFailure } from '@temporalio/common';
import { createBmcActivities } from '../../activities/bmc/activities';
import { createIronicActivities } from '../../activities/ironic/activities';
import { IronicClient, IronicError } from '../../clients/ironic/client';
import { RedfishClient, RedfishError, type RedfishClientOptions } from '../../clients/redfish';
import { LocalSecretStore } from '../../clients/secrets/local-store';
import { readTlsFiles } from '../../clients/tls/files';
import { loadConfig } from '../../config/env';
import type { HostSpec } from '../../model/host';
import { makePki, type TestPki } from '../support/certs';
import { uniq } from '../support/harness';
import { startTlsProxy, type TlsProxy } from '../support/tls-proxy';
import { startTlsStack, type TlsStack } from '../support/tls-stack';

const NS = 'tls';
/** A system of scripts/sushy-fake-systems.json, on the HTTPS sushy of this file only. */
const SYSTEM = '/redfish/v1/Systems/6d660000-0000-4000-8000-000000000002';
const poll = { initialMs: 100, factor: 1.5, maxMs: 1000 };

let pki: TestPki;
let otherCa: TestPki;
let peers: TlsStack;
let secrets: LocalSecretStore;

beforeAll(async () => {
  pki = makePki({ server: 'server', 'metalflow-worker': 'client' });
  otherCa = makePki({ stranger: 'client' }, 'another CA');
  peers = await startTlsStack(pki.crt('server'), pki.key('server'));
  secrets = new LocalSecretStore(mkdtempSync(join(tmpdir(), 'mf-tls-')), randomBytes(32));
  await secrets.write(NS, 'bmc', { username: 'admin', password: 'password' });
}, 180_000);

afterAll(() => {
  peers?.stop();
});

async function rejection<T extends Error>(p: Promise<unknown>, type: new (...args: never[]) => T): Promise<T> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(type);
  return err as T;
}

describe('Redfish over HTTPS, spoken directly', () => {
  const opts = (extra: Partial<RedfishClientOptions> = {}): RedfishClientOptions => ({
    endpoint: { transport: 'https', host: '127.0.0.1', port: peers.sushyPort, path: SYSTEM },
    username: 'admin',
    password: 'password',
    timeoutMs: 10_000,
    ...extra,
  });
  const target = (): { ref: { namespace: string; name: string }; spec: HostSpec } => ({
    ref: { namespace: NS, name: 'h' },
    spec: { bmc: { address: `redfish+${peers.sushyUrl}${SYSTEM}`, credentialsName: 'bmc' }, online: true },
  });

  it('verifies the BMC against the CA bundle: the client and the pre-flight connect', async () => {
    // As the worker reads it: METALFLOW_BMC_CACERT_FILE, then the file.
    const caFile = loadConfig({ METALFLOW_BMC_CACERT_FILE: pki.caFile }).bmcCaFile!;
    const ca = readTlsFiles({ caFile }).ca!;
    const client = await RedfishClient.connect(opts({ ca }));
    expect(client.origin).toBe(peers.sushyUrl);
    expect(['On', 'Off']).toContain(await client.getPowerState());
    await client.close();
    const { power } = await createBmcActivities({ secrets, timeoutMs: 10_000, ca }).preflightBmc(target());
    expect(['on', 'off']).toContain(power);
  });

  it('without the CA (or with another one) the connection fails with a tls error that names the setting', async () => {
    for (const ca of [undefined, readFileSync(otherCa.caFile)]) {
      const err = await rejection(RedfishClient.connect(opts(ca ? { ca } : {})), RedfishError);
      expect(err.kind).toBe('tls');
      expect(err.message).toContain(`TLS with Redfish BMC at ${peers.sushyUrl} failed: unable to verify the first certificate`);
      expect(err.message).toContain('METALFLOW_BMC_CACERT_FILE');
    }
    const f = await rejection(createBmcActivities({ secrets, timeoutMs: 10_000 }).preflightBmc(target()), ApplicationFailure);
    expect(f.nonRetryable).toBe(true);
    expect(f.message).toContain('TLS with Redfish BMC');
    expect(f.details?.[0]).toEqual({ kind: 'tls' });
  });

  it('disableCertificateVerification still connects without any CA', async () => {
    const client = await RedfishClient.connect(opts({ disableCertificateVerification: true }));
    expect(['On', 'Off']).toContain(await client.getPowerState());
    await client.close();
    const spec = { ...target().spec, bmc: { ...target().spec.bmc!, disableCertificateVerification: true } };
    const { power } = await createBmcActivities({ secrets, timeoutMs: 10_000 }).preflightBmc({ ...target(), spec });
    expect(['on', 'off']).toContain(power);
  });
});

describe('the Ironic API over HTTPS', () => {
  let proxy: TlsProxy;
  beforeAll(async () => {
    const pem = readTlsFiles({ caFile: pki.caFile, certFile: pki.crt('server'), keyFile: pki.key('server') });
    proxy = await startTlsProxy({ cert: pem.cert!, key: pem.key!, clientCa: pem.ca!, upstream: { host: '127.0.0.1', port: peers.ironicPort, ca: pem.ca! } });
  });
  afterAll(async () => {
    await proxy?.close();
  });

  it('verifies Ironic with IRONIC_CACERT_FILE', async () => {
    const config = loadConfig({ IRONIC_URL: peers.ironicUrl, IRONIC_CACERT_FILE: pki.caFile });
    const ironic = new IronicClient({ url: config.ironicUrl, tls: readTlsFiles(config.ironicTls!) });
    expect(await ironic.microversion()).toBe('1.81');
  });

  it('without it (or with another CA) the client fails with a tls error naming IRONIC_CACERT_FILE', async () => {
    for (const tls of [undefined, { ca: readFileSync(otherCa.caFile) }]) {
      const err = await rejection(new IronicClient({ url: peers.ironicUrl, ...(tls ? { tls } : {}) }).microversion(), IronicError);
      expect(err.kind).toBe('tls');
      expect(err.message).toBe(
        `TLS with Ironic at ${peers.ironicUrl} failed: unable to verify the first certificate (UNABLE_TO_VERIFY_LEAF_SIGNATURE); its certificate is not signed by a trusted CA: IRONIC_CACERT_FILE names the CA bundle that signed it`,
      );
    }
  });

  it('behind a proxy that wants mutual TLS: the client certificate is presented; without one the error says so', async () => {
    const url = `https://127.0.0.1:${proxy.port}`;
    const config = loadConfig({
      IRONIC_URL: url,
      IRONIC_CACERT_FILE: pki.caFile,
      IRONIC_CLIENT_CERT_FILE: pki.crt('metalflow-worker'),
      IRONIC_CLIENT_PRIVATE_KEY_FILE: pki.key('metalflow-worker'),
    });
    expect(await new IronicClient({ url, tls: readTlsFiles(config.ironicTls!) }).microversion()).toBe('1.81');
    expect(proxy.clientCertificates).toEqual(['metalflow-worker']);

    const without = await rejection(new IronicClient({ url, tls: readTlsFiles({ caFile: pki.caFile }) }).microversion(), IronicError);
    expect(without.kind).toBe('tls');
    expect(without.message).toContain('IRONIC_CLIENT_CERT_FILE and IRONIC_CLIENT_PRIVATE_KEY_FILE');
    // A certificate from a CA the proxy does not trust is no better.
    const stranger = readTlsFiles({ caFile: pki.caFile, certFile: otherCa.crt('stranger'), keyFile: otherCa.key('stranger') });
    const refused = await rejection(new IronicClient({ url, tls: stranger }).microversion(), IronicError);
    expect(refused.kind).toBe('tls');
    expect(refused.message).toContain('IRONIC_CLIENT_CERT_FILE and IRONIC_CLIENT_PRIVATE_KEY_FILE');
    expect(proxy.clientCertificates).toEqual(['metalflow-worker']);
  });
});

describe('Ironic to an HTTPS BMC with redfish_verify_ca', () => {
  const host = async (): Promise<{ ref: { namespace: string; name: string }; spec: HostSpec }> => {
    const ref = { namespace: NS, name: uniq('redfish-tls') };
    await secrets.write(NS, `${ref.name}-bmc`, { username: 'admin', password: 'password' });
    return { ref, spec: { bmc: { address: `redfish+${peers.sushyUrl}${SYSTEM}`, credentialsName: `${ref.name}-bmc` }, online: true, automatedCleaningMode: 'disabled' } };
  };
  const ironic = (): IronicClient => new IronicClient({ url: peers.ironicUrl, tls: readTlsFiles({ caFile: pki.caFile }) });

  it('the node carries the conductor path, and Ironic registers and inspects the BMC out of band through it', async () => {
    // The conductor is on this machine, so the CA file's own path is the conductor path.
    const verifyCa = loadConfig({ METALFLOW_IRONIC_REDFISH_VERIFY_CA: pki.caFile }).ironicRedfishVerifyCa;
    const client = ironic();
    const acts = createIronicActivities({ ironic: client, secrets, poll, redfishVerifyCa: verifyCa });
    const { ref, spec } = await host();
    const { nodeId } = await acts.ensureNode({ ref, spec });
    const node = await client.getNode(nodeId);
    expect(node?.driver_info.redfish_verify_ca).toBe(pki.caFile);
    expect(node?.driver_info.redfish_address).toBe(peers.sushyUrl);
    // Registering has Ironic read the power state from the BMC; inspection reads its inventory.
    expect((await acts.manageNode({ ref, nodeId })).provisionState).toBe('manageable');
    const { hardware } = await acts.inspectNode({ ref, nodeId });
    expect(hardware.cpu?.count).toBeGreaterThan(0);
    expect(hardware.ramMebibytes).toBeGreaterThan(0);
    await acts.deleteNode({ ref, nodeId });
  });

  it('without it Ironic refuses the BMC certificate, and registration fails with its reason', async () => {
    const client = ironic();
    const acts = createIronicActivities({ ironic: client, secrets, poll });
    const { ref, spec } = await host();
    const { nodeId } = await acts.ensureNode({ ref, spec });
    expect((await client.getNode(nodeId))?.driver_info).not.toHaveProperty('redfish_verify_ca');
    const f = await rejection(acts.manageNode({ ref, nodeId }), ApplicationFailure);
    expect(f.message).toMatch(/^registration failed: /);
    expect(f.message).toMatch(/CERTIFICATE_VERIFY_FAILED|certificate verify failed/);
    await acts.deleteNode({ ref, nodeId });
  });
});
