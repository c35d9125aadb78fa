/**
 * A host's agent whose state dir lives under /tmp (a checkout under /tmp, as
 * a clean clone often is): the agent's mount namespace puts a scratch tmpfs
 * over /tmp, and the state dir (log, shims, power-off fifo) must survive it
 * while the rest of /tmp stays hidden; the agent token the agent logs is masked
 * in its log. Needs no Ironic: the agent keeps
 * looking itself up against a port nothing listens on. Root only.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../config/env';
import { agentLabUnavailable } from '../support/agent-lab';
import { randomMac, uniq, waitFor } from '../support/harness';
import { unusedPort } from '../support/ports';

const run = promisify(execFile);
const unavailable = agentLabUnavailable();
if (unavailable) console.warn(`[agent-state-under-tmp] skipped: ${unavailable}`);

const IPA_HOST = join(REPO_ROOT, 'scripts', 'agent', 'ipa-host.sh');
const PLANTED_TOKEN = 'PlantedAgentToken0123456789-abcdefghijklmno';

describe.skipIf(unavailable !== undefined)('an agent whose state dir is under /tmp', () => {
  const state = mkdtempSync(join(tmpdir(), 'mf-agent-state-'));
  // A file elsewhere in /tmp: the agent must not see it.
  const outside = mkdtempSync(join(tmpdir(), 'mf-agent-outside-'));
  writeFileSync(join(outside, 'marker'), 'machine file');
  const name = uniq('tmp');
  const env = { ...process.env, METALFLOW_AGENT_STATE: state };

  afterAll(async () => {
    await run('bash', [IPA_HOST, 'destroy', name], { env }).catch(() => undefined);
    rmSync(state, { recursive: true, force: true });
    rmSync(outside, { recursive: true, force: true });
  }, 60_000);

  it('runs with its state dir writable and the rest of /tmp hidden', async () => {
    const cmdline = join(state, 'cmdline.txt');
    // A planted agent token: IPA logs its configuration (the token among it) at start.
    writeFileSync(cmdline, `ipa-api-url=http://127.0.0.1:${await unusedPort()} ipa-insecure=1 ipa-agent-token=${PLANTED_TOKEN}\n`);
    await run('bash', [IPA_HOST, 'start', name, '--mac', randomMac(), '--disks', '64M', '--cmdline', cmdline, '--agent-port', String(await unusedPort()), '--forward', String(await unusedPort())], { env });
    const dir = join(state, name);
    const ipaLog = join(dir, 'ipa.log');
    const alive = () => run('bash', [IPA_HOST, 'status', name], { env }).then(() => true, () => false);
    // The agent logs once it runs in its namespace, into the state dir; before the fix the namespace set-up died first.
    const outcome = await waitFor('the agent logging, or its namespace set-up failing', async () => {
      if (existsSync(ipaLog) && readFileSync(ipaLog, 'utf8').includes('ironic_python_agent')) return 'running';
      return (await alive()) ? undefined : 'exited';
    }, { timeoutMs: 60_000 });
    expect(outcome, readFileSync(join(dir, 'run', 'agent.log'), 'utf8')).toBe('running');
    expect(await alive()).toBe(true);

    const agent = readdirSync('/proc').find((p) => /^\d+$/.test(p) && cmdlineOf(p).includes(join(dir, 'ipa.conf')));
    expect(agent).toBeDefined();
    const inAgent = (script: string) => execFileSync('nsenter', ['-t', agent!, '-m', 'sh', '-c', script], { encoding: 'utf8' });
    expect(inAgent(`test -e '${join(outside, 'marker')}' && echo seen || echo hidden`).trim()).toBe('hidden');
    expect(inAgent(`test -w '${dir}' && test -e '${dir}/poweroff.fifo' && echo ok`).trim()).toBe('ok');

    // The token reached the agent (its configuration dump names it) and its log holds it masked only.
    const dump = await waitFor('the agent\'s configuration dump naming agent_token', async () => readFileSync(ipaLog, 'utf8').split('\n').find((l) => /\bagent_token\s+=/.test(l)), { timeoutMs: 30_000 });
    expect(dump).toMatch(/agent_token\s+=\s+\*\*\*/);
    expect(readFileSync(ipaLog, 'utf8')).not.toContain(PLANTED_TOKEN);
  }, 120_000);
});

function cmdlineOf(pid: string): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return '';
  }
}
