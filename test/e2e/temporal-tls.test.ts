/**
 * The Temporal connection over TLS, mutual TLS and with an API key, for real
 * processes configured from the environment only (Temporal's own variable
 * names). `temporal server start-dev` serves neither TLS nor API keys, so a
 * proxy in front of the test stack's dev server does (test/support/
 * grpc-proxy.ts): it terminates TLS, requires a client certificate from the
 * test's CA, refuses calls without the API key, and shows what it received.
 * The certificates are made by openssl for the test.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { connectTemporalClient } from '../../clients/temporal/connection';
import { connectTemporalWorker } from '../../clients/temporal/native-connection';
import { TemporalConnectError } from '../../clients/temporal/connect-failure';
import { loadConfig, REPO_ROOT, temporalConnection } from '../../config/env';
import { makePki, type TestPki } from '../support/certs';
import { IRONIC_URL, TEMPORAL_ADDRESS, WORKFLOW_BUNDLE_PATH } from '../support/env';
import { startGrpcProxy, type GrpcProxy } from '../support/grpc-proxy';
import { randomMac, uniq, waitFor } from '../support/harness';
import { unusedPort } from '../support/ports';

const API_KEY = `key-${randomBytes(12).toString('hex')}`;
const NS = 'temporal-tls';

let pki: TestPki;
let otherCa: TestPki;
/** TLS, a client certificate required, and the API key: what a locked-down Temporal asks. */
let locked: GrpcProxy;
/** TLS only, for the certificate-verification failures. */
let tlsOnly: GrpcProxy;
/** The API key over plain gRPC (TEMPORAL_TLS=false). */
let keyOnly: GrpcProxy;
const children: ChildProcess[] = [];

beforeAll(async () => {
  pki = makePki({ server: 'server', 'metalflow-worker': 'client', 'metalflow-api': 'client' });
  otherCa = makePki({ stranger: 'client' }, 'another CA');
  const read = (f: string) => readFileSync(f);
  const tls = { cert: read(pki.crt('server')), key: read(pki.key('server')) };
  locked = await startGrpcProxy({ upstream: TEMPORAL_ADDRESS, tls: { ...tls, clientCa: read(pki.caFile) }, apiKey: API_KEY });
  tlsOnly = await startGrpcProxy({ upstream: TEMPORAL_ADDRESS, tls });
  keyOnly = await startGrpcProxy({ upstream: TEMPORAL_ADDRESS, apiKey: API_KEY });
});

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM');
  await Promise.all([locked?.close(), tlsOnly?.close(), keyOnly?.close()]);
});

interface NodeProcess {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/** `node --import tsx <file>` with `env` on top of this process's. */
function runNode(file: string, env: Record<string, string>): NodeProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', join(REPO_ROOT, file)], { cwd: REPO_ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

/** `probe` has come true, or the process exited first (an error with its output). */
async function ready(p: NodeProcess, what: string, probe: () => Promise<boolean>): Promise<void> {
  const died = p.exited.then((code) => {
    throw new Error(`${what}: the process exited (${code}) first:\n${p.output()}`);
  });
  await Promise.race([waitFor(what, probe, { timeoutMs: 120_000, intervalMs: 250 }), died]);
}

/** Every process gets a state folder and secret key of its own (never the demo's .state/stack). */
const own = (): Record<string, string> => ({
  IRONIC_URL,
  METALFLOW_STATE_DIR: mkdtempSync(join(tmpdir(), 'mf-temporal-tls-')),
  METALFLOW_SECRET_KEY: randomBytes(32).toString('base64'),
  // A Worker Deployment of its own: its worker's version becomes current at start, whatever build the stack saw before.
  METALFLOW_WORKER_DEPLOYMENT: uniq('mf-tls'),
});

const tlsEnv = (address: string, client?: string): Record<string, string> => ({
  TEMPORAL_ADDRESS: address,
  TEMPORAL_TLS_SERVER_CA_CERT_PATH: pki.caFile,
  ...(client ? { TEMPORAL_TLS_CLIENT_CERT_PATH: pki.crt(client), TEMPORAL_TLS_CLIENT_KEY_PATH: pki.key(client) } : {}),
});

describe('worker and API processes over mutual TLS with an API key', () => {
  it('both connect; a host is created through the API and run by the worker; the proxy saw their certificates and the key on every call', async () => {
    // The API writes the host's credentials, the worker reads them: one store.
    const shared = { ...own(), METALFLOW_TASK_QUEUE: uniq('tq-tls'), TEMPORAL_API_KEY: API_KEY };
    const worker = runNode('workers/main.ts', { ...shared, ...tlsEnv(locked.address, 'metalflow-worker'), METALFLOW_WORKFLOW_BUNDLE: WORKFLOW_BUNDLE_PATH });
    const port = await unusedPort();
    const api = runNode('api/main.ts', {
      ...shared,
      ...tlsEnv(locked.address, 'metalflow-api'),
      METALFLOW_API_AUTH: 'none',
      METALFLOW_API_HOST: '127.0.0.1',
      METALFLOW_API_PORT: String(port),
    });
    await ready(worker, 'the worker to run', async () => worker.output().includes('metalflow worker on task queue'));
    expect(worker.output()).toContain(`at ${locked.address} (TLS)`);
    const base = `http://127.0.0.1:${port}`;
    await ready(api, 'the API to listen', async () => (await request(`${base}/healthz`)).statusCode === 200);

    const name = uniq('tls-host');
    const body = {
      spec: { bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc` }, bootMACAddress: randomMac(), online: true },
      credentials: { username: 'admin', password: 'pw' },
    };
    const put = await request(`${base}/v1/namespaces/${NS}/hosts/${name}`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect(put.statusCode, await put.body.text()).toBe(201);
    // Past registering: the worker ran the host's workflow and its first operation through the proxy.
    await waitFor(
      'the host to be available',
      async () => {
        const res = await request(`${base}/v1/namespaces/${NS}/hosts/${name}`);
        const host = (await res.body.json()) as { status?: { provisioning?: { state?: string } } };
        return host.status?.provisioning?.state === 'available';
      },
      { timeoutMs: 120_000, intervalMs: 500 },
    );
    // Deleted through both processes too, leaving nothing behind in Temporal or Ironic.
    const del = await request(`${base}/v1/namespaces/${NS}/hosts/${name}`, { method: 'DELETE' });
    expect(del.statusCode).toBe(202);
    await waitFor('the host to be gone', async () => (await request(`${base}/v1/namespaces/${NS}/hosts/${name}`)).statusCode === 404, {
      timeoutMs: 120_000,
      intervalMs: 500,
    });

    expect(new Set(locked.clientCertificates)).toEqual(new Set(['metalflow-worker', 'metalflow-api']));
    expect(locked.authorizations.length).toBeGreaterThan(10);
    expect(new Set(locked.authorizations)).toEqual(new Set([`Bearer ${API_KEY}`]));
    expect(locked.refused).toBe(0);
    worker.child.kill('SIGTERM');
    api.child.kill('SIGTERM');
  });

  it('the API without a client certificate stops at start, saying the server requires one', async () => {
    const api = runNode('api/main.ts', { ...own(), ...tlsEnv(locked.address), TEMPORAL_API_KEY: API_KEY, METALFLOW_API_AUTH: 'none', METALFLOW_API_PORT: String(await unusedPort()) });
    expect(await api.exited).not.toBe(0);
    expect(api.output()).toContain(
      `cannot connect to Temporal at ${locked.address} over TLS trusting ${pki.caFile} with an API key: the server requires a client certificate (mutual TLS;`,
    );
    expect(api.output()).toContain('set TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH');
  });

  it('a worker without the CA stops at start, saying the server certificate is not signed by a CA it trusts', async () => {
    const worker = runNode('workers/main.ts', { ...own(), TEMPORAL_ADDRESS: tlsOnly.address, TEMPORAL_TLS: 'true' });
    expect(await worker.exited).not.toBe(0);
    expect(worker.output()).toContain(
      `cannot connect to Temporal at ${tlsOnly.address} over TLS trusting the system's CAs: the server's certificate is not signed by a CA this process trusts`,
    );
    expect(worker.output()).toContain('set TEMPORAL_TLS_SERVER_CA_CERT_PATH to the CA bundle that signed it');
  });
});

describe('connection failures from the settings, in process', () => {
  const worker = (env: NodeJS.ProcessEnv) => connectTemporalWorker(temporalConnection(loadConfig(env)));
  const refusal = async (p: Promise<unknown>): Promise<string> => {
    const err = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(TemporalConnectError);
    return (err as Error).message;
  };

  it('another CA, a certificate the server does not trust, a server without TLS, a missing or wrong API key', async () => {
    expect(await refusal(worker({ ...tlsEnv(tlsOnly.address), TEMPORAL_TLS_SERVER_CA_CERT_PATH: otherCa.caFile }))).toContain(
      `the server's certificate is not signed by the CA in ${otherCa.caFile}`,
    );
    expect(
      await refusal(
        worker({ ...tlsEnv(locked.address), TEMPORAL_TLS_CLIENT_CERT_PATH: otherCa.crt('stranger'), TEMPORAL_TLS_CLIENT_KEY_PATH: otherCa.key('stranger'), TEMPORAL_API_KEY: API_KEY }),
      ),
    ).toContain(`it most likely refused the client certificate ${otherCa.crt('stranger')}`);
    expect(await refusal(worker({ ...tlsEnv(TEMPORAL_ADDRESS) }))).toContain('the server does not speak TLS');
    expect(await refusal(worker({ TEMPORAL_ADDRESS: keyOnly.address }))).toContain('an API key is required');
    expect(await refusal(worker({ TEMPORAL_ADDRESS: keyOnly.address, TEMPORAL_API_KEY: 'not-the-key', TEMPORAL_TLS: 'false' }))).toContain('the API key is not valid');
    expect(keyOnly.refused).toBe(2);
  });

  it('an API key over plain gRPC (TEMPORAL_TLS=false) is sent as a bearer token by the client and the worker', async () => {
    const before = keyOnly.authorizations.length;
    const settings = temporalConnection(loadConfig({ TEMPORAL_ADDRESS: keyOnly.address, TEMPORAL_API_KEY: API_KEY, TEMPORAL_TLS: 'false' }));
    const client = await connectTemporalClient(settings);
    await client.workflowService.getSystemInfo({});
    await client.close();
    const native = await connectTemporalWorker(settings);
    await native.close();
    const sent = keyOnly.authorizations.slice(before);
    expect(sent.length).toBeGreaterThanOrEqual(2);
    expect(new Set(sent)).toEqual(new Set([`Bearer ${API_KEY}`]));
  });
});
