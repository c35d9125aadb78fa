/**
 * The Temporal CLI examples of README.md and docs/getting-started.md, run
 * verbatim as a demo user would after `source .state/stack/temporal-cli.env`:
 * against an encrypting worker on the demo's task queue (in a Temporal
 * namespace of the test's own, so the demo's ids and queue cannot meet other
 * tests), through the real codec server process, with the env file written
 * by the script the demo uses. Each must succeed and print payloads decoded.
 */
import { randomBytes } from 'node:crypto';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EncryptionCodec } from '../../clients/temporal/payload-codec';
import { tokenHash } from '../../api/auth/token-file';
import { REPO_ROOT } from '../../config/env';
import { hostWorkflowId } from '../../model/host-ref';
import { hostViewQuery } from '../../contracts/host';
import { TEMPORAL_ADDRESS } from '../support/env';
import { randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';
import { unusedPort } from '../support/ports';
import { createTemporalNamespace } from '../support/temporal-namespace';

const DOCS = ['README.md', 'docs/getting-started.md'];
const ENV_LINE = 'source .state/stack/temporal-cli.env';
const ENCRYPTED = 'binary/encrypted';

/** Each shell command in the docs' sh blocks (continuations joined), per file. */
function shCommands(file: string): string[] {
  const text = readFileSync(join(REPO_ROOT, file), 'utf8');
  const out: string[] = [];
  for (const block of text.matchAll(/```sh\n([\s\S]*?)```/g)) {
    out.push(...block[1]!.replace(/\\\n\s*/g, '').split('\n').map((l) => l.trim()).filter(Boolean));
  }
  return out;
}
const isCli = (cmd: string): boolean => /^(\.venv\/bin\/)?temporal\s/.test(cmd);

const namespace = uniq('docs-cli');
const key = { id: 'k1', key: randomBytes(32) };
const token = randomBytes(24).toString('hex');
const hosts = ['fake-0', 'fake-1'].map((name) => ({ name, mac: randomMac() }));
let h: Harness;
let codec: ChildProcess;
let envFile: string;

beforeAll(async () => {
  createTemporalNamespace(namespace);
  h = await startHarness({ namespace, taskQueue: 'metalflow-hosts', dataConverter: { payloadCodecs: [new EncryptionCodec([key])] } });
  const dir = mkdtempSync(join(tmpdir(), 'mf-docs-cli-'));
  const keysFile = join(dir, 'payload.keys');
  const tokenFile = join(dir, 'api-token');
  const tokensFile = join(dir, 'api-tokens');
  writeFileSync(keysFile, `${key.id}:${key.key.toString('base64')}\n`, { mode: 0o600 });
  writeFileSync(tokenFile, token, { mode: 0o600 });
  writeFileSync(tokensFile, `${tokenHash(token)} demo admin:*\n`, { mode: 0o600 });
  const port = await unusedPort();
  codec = spawn(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'api', 'codec-main.ts')], {
    cwd: REPO_ROOT,
    env: { ...process.env, TEMPORAL_ADDRESS, METALFLOW_PAYLOAD_KEYS_FILE: keysFile, METALFLOW_API_TOKENS_FILE: tokensFile, METALFLOW_CODEC_PORT: String(port) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    codec.stdout!.on('data', (b: Buffer) => b.toString().includes('metalflow codec server on') && resolve());
    codec.once('exit', (code) => reject(new Error(`the codec server exited (${code})`)));
  });
  // The env file the demo writes, by the demo's own script.
  const env = await run('bash', [join(REPO_ROOT, 'scripts', 'temporal-cli-env.sh')], {
    TEMPORAL_ADDRESS,
    TEMPORAL_NAMESPACE: namespace,
    METALFLOW_CODEC_PORT: String(port),
    METALFLOW_API_TOKEN_FILE: tokenFile,
  });
  expect(env.status, env.stderr).toBe(0);
  envFile = join(dir, 'temporal-cli.env');
  writeFileSync(envFile, env.stdout, { mode: 0o600 });

  for (const { name, mac } of hosts) {
    await h.hosts.put({ namespace: 'demo', name }, { spec: { bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc` }, bootMACAddress: mac, online: true }, credentials: { username: 'admin', password: 'pw' } });
  }
  for (const { name } of hosts) {
    const handle = h.client.workflow.getHandle(hostWorkflowId({ namespace: 'demo', name }));
    await waitFor(`${name} available`, async () => (await handle.query(hostViewQuery)).status.provisioning.state === 'available', { timeoutMs: 120_000 });
  }
}, 240_000);

afterAll(async () => {
  await h?.client.workflow.getHandle('fleet/rack-7-reboot').terminate('test over').catch(() => undefined);
  codec?.kill();
  await h?.close();
});

function run(cmd: string, args: string[], env: Record<string, string> = {}): Promise<{ status: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    // The user's shell: no TEMPORAL_* of the test process.
    const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TEMPORAL_')));
    execFile(cmd, args, { cwd: REPO_ROOT, env: { ...base, ...env }, encoding: 'utf8', timeout: 90_000 }, (err, stdout, stderr) =>
      resolve({ status: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('the docs\' Temporal CLI examples, verbatim against the demo', () => {
  it('each file tells the reader to source the demo\'s env file before its first CLI example', () => {
    for (const file of DOCS) {
      const cmds = shCommands(file);
      const first = cmds.findIndex(isCli);
      expect(first, `${file} has a temporal example`).toBeGreaterThanOrEqual(0);
      expect(cmds.slice(0, first).some((c) => c.startsWith(ENV_LINE)), file).toBe(true);
    }
    // The path the docs name is the one the demo writes.
    expect(readFileSync(join(REPO_ROOT, 'scripts', 'lib', 'demo-codec.sh'), 'utf8')).toMatch(/CLI_ENV=\$METALFLOW_STATE_DIR\/temporal-cli\.env/);
  });

  it('every example succeeds and prints payloads decoded', async () => {
    const examples = DOCS.flatMap((file) => shCommands(file).filter(isCli).map((cmd) => ({ file, cmd })));
    expect(examples.length).toBeGreaterThanOrEqual(6);
    for (const { file, cmd } of examples) {
      const res = await run('bash', ['-c', `source ${JSON.stringify(envFile)} && ${cmd}`]);
      const shown = `${file}: ${cmd}\n${res.stdout}\n${res.stderr}`;
      expect(res.status, shown).toBe(0);
      expect(res.stdout, shown).not.toContain(ENCRYPTED);
      expect(res.stdout, shown).not.toContain(Buffer.from(ENCRYPTED).toString('base64'));
      if (/query -w host\/demo\/fake-0 --type host/.test(cmd) || /show -w host\/demo\/fake-0/.test(cmd)) expect(res.stdout, shown).toContain(hosts[0]!.mac);
      if (/workflow list --query 'MetalflowProvisioningState = "available"'/.test(cmd)) expect(res.stdout, shown).toContain('host/demo/fake-0');
    }
  }, 300_000);
});
