/**
 * Runs `ipmitool -I lanplus` for one IPMI command.
 *
 * The password never appears on the command line (where `ps` and
 * /proc/<pid>/cmdline show it to every user): it goes to the child through
 * its environment (`-E`, IPMI_PASSWORD; readable only by the same user) or a
 * private password file (`-f`, mode 0600 in a 0700 temp folder, removed after
 * the call). The child gets a minimal environment, not ours.
 *
 * Each run has a hard time limit (the process is killed), on top of
 * ipmitool's own per-packet timeout (-N) and retries (-R). Failures become
 * `IpmiError`s: bad credentials, unreachable (DNS, no answer), unsupported
 * (cipher suite, command or parameter the BMC refuses), bmc-fault.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { abortReason } from '../bmc/abort';
import { IpmiError, redact } from '../bmc/errors';

export type IpmiPrivilege = 'ADMINISTRATOR' | 'OPERATOR' | 'USER' | 'CALLBACK';

export interface IpmitoolOptions {
  host: string;
  /** Default 623. */
  port?: number;
  username: string;
  password: string;
  /** RMCP+ cipher suite (`-C`). Default 3 (HMAC-SHA1, HMAC-SHA1-96, AES-CBC-128). */
  cipherSuite?: number;
  /** Default ADMINISTRATOR, as Ironic and Metal3 use. */
  privilegeLevel?: IpmiPrivilege;
  /** Hard limit for one ipmitool run; the process is killed after it. Default 20 s. */
  timeoutMs?: number;
  /** ipmitool's per-packet timeout in seconds (`-N`). Default 1. */
  retransmitTimeoutSec?: number;
  /** ipmitool's retries per packet (`-R`). Default 3. */
  retries?: number;
  /** `env` (default): `-E` with IPMI_PASSWORD in the child's environment; `file`: `-f` with a private temp file. */
  passwordVia?: 'env' | 'file';
  /** Default `ipmitool` (from PATH). */
  ipmitoolPath?: string;
  /** Called with the child's pid and argv right after it starts (tests use it to look at /proc). */
  onSpawn?: (child: { pid: number; argv: string[] }) => void;
  /** Kills a running ipmitool and rejects with the signal's reason (a cancelled activity). */
  signal?: AbortSignal;
}

export interface IpmitoolResult {
  stdout: string;
  stderr: string;
}

/** stderr lines `-v` adds on every run, even successful ones. */
const NOISE = [/^Loading IANA PEN Registry/, /^Running Get VSO Capabilities/, /^Discovered IPMB address/, /^Get HPM\.x Capabilities/, /^Invalid completion code received/];

const BAD_CREDENTIALS: Array<[RegExp, string]> = [
  [/RAKP 2 HMAC is invalid/i, 'wrong password (RAKP 2 HMAC is invalid)'],
  [/unauthorized name/i, 'unknown user name (RAKP 2: unauthorized name)'],
  [/RAKP 4 message has invalid integrity check/i, 'wrong BMC key (Kg) (RAKP 4 integrity check failed)'],
  [/unauthorized role or privilege|requested maximum privilege level exceeds|invalid role/i, 'the user may not take the requested privilege level'],
  [/Insufficient privilege level/i, 'the user lacks the privilege for this command'],
];

const UNREACHABLE: Array<[RegExp, string]> = [
  [/Address lookup for (\S+) failed/i, 'DNS lookup of the BMC host failed'],
  [/Get Auth Capabilities error|Error issuing Get Channel Authentication Capabilities|No response from remote controller|Unable to receive|timeout/i, 'no answer from the BMC'],
  [/Connection refused/i, 'connection refused'],
];

const UNSUPPORTED: Array<[RegExp, string]> = [
  [/invalid authentication algorithm|invalid integrity algorithm|invalid confidentiality algorithm|no matching cipher suite|Unsupported cipher suite/i, 'the BMC does not offer this cipher suite'],
  [/Invalid data field in request/i, 'the BMC does not support this (invalid data field in request)'],
  [/Invalid command/i, 'the BMC does not support this command'],
  [/Command not supported in present state/i, 'the BMC does not support this command in its present state'],
  [/Parameter not supported/i, 'the BMC does not support this parameter'],
  [/IPMI v2 \/ RMCP\+ .*not supported|does not support IPMI v2|lanplus.*not supported/i, 'the BMC does not speak IPMI 2.0 (lanplus)'],
];

/** The interesting stderr/stdout lines of a failed run, without `-v` noise. */
function relevantLines(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !NOISE.some((re) => re.test(l)));
}

export function classifyIpmitoolFailure(output: string, where: string, command: string, secret?: string): IpmiError {
  const lines = relevantLines(redact(output, secret));
  const joined = lines.join('\n');
  const detail = lines.slice(-3).join('; ');
  for (const [re, why] of BAD_CREDENTIALS) {
    if (re.test(joined)) return new IpmiError('bad-credentials', `IPMI ${command} on ${where}: ${why}: ${detail}`);
  }
  for (const [re, why] of UNSUPPORTED) {
    if (re.test(joined)) return new IpmiError('unsupported', `IPMI ${command} on ${where}: ${why}: ${detail}`);
  }
  for (const [re, why] of UNREACHABLE) {
    if (re.test(joined)) return new IpmiError('unreachable', `cannot reach IPMI BMC at ${where}: ${why}: ${detail}`);
  }
  if (/Unable to establish IPMI v2 \/ RMCP\+ session/i.test(joined)) {
    return new IpmiError('unreachable', `cannot reach IPMI BMC at ${where}: no IPMI 2.0 session could be established: ${detail}`);
  }
  return new IpmiError('bmc-fault', `IPMI ${command} on ${where} failed: ${detail || 'ipmitool exited with an error and no message'}`);
}

export function ipmitoolArgs(opts: IpmitoolOptions, command: readonly string[], passwordFile?: string): string[] {
  return [
    '-I', 'lanplus',
    '-H', opts.host,
    '-p', String(opts.port ?? 623),
    '-U', opts.username,
    '-L', opts.privilegeLevel ?? 'ADMINISTRATOR',
    '-C', String(opts.cipherSuite ?? 3),
    '-N', String(opts.retransmitTimeoutSec ?? 1),
    '-R', String(opts.retries ?? 3),
    // -v makes ipmitool say why a session failed (wrong password vs no answer).
    '-v',
    ...(passwordFile ? ['-f', passwordFile] : ['-E']),
    ...command,
  ];
}

export async function runIpmitool(opts: IpmitoolOptions, command: readonly string[]): Promise<IpmitoolResult> {
  const where = `${opts.host.includes(':') ? `[${opts.host}]` : opts.host}:${opts.port ?? 623}`;
  const timeoutMs = opts.timeoutMs ?? 20_000;
  const bin = opts.ipmitoolPath ?? 'ipmitool';
  const commandText = command.join(' ');
  let dir: string | undefined;
  let passwordFile: string | undefined;
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C' };
  if (opts.passwordVia === 'file') {
    dir = await mkdtemp(join(tmpdir(), 'metalflow-ipmi-'));
    passwordFile = join(dir, 'secret');
    await writeFile(passwordFile, opts.password, { mode: 0o600 });
  } else {
    env.IPMI_PASSWORD = opts.password;
  }
  const argv = ipmitoolArgs(opts, command, passwordFile);
  const cancel = opts.signal;
  try {
    if (cancel?.aborted) throw abortReason(cancel);
    return await new Promise<IpmitoolResult>((resolve, reject) => {
      const child = spawn(bin, argv, { env, stdio: ['ignore', 'pipe', 'pipe'] });
      const onAbort = () => child.kill('SIGKILL');
      cancel?.addEventListener('abort', onAbort, { once: true });
      let stdout = '';
      let stderr = '';
      let timedOut = false;
      child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      const timer = setTimeout(() => {
        timedOut = true;
        child.kill('SIGKILL');
      }, timeoutMs);
      child.once('spawn', () => {
        if (child.pid !== undefined) opts.onSpawn?.({ pid: child.pid, argv: [bin, ...argv] });
      });
      child.once('error', (err: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        cancel?.removeEventListener('abort', onAbort);
        const why = err.code === 'ENOENT' ? `${bin} is not installed (install the Debian package ipmitool)` : err.message;
        reject(new IpmiError('unsupported', `cannot run ipmitool for ${where}: ${why}`));
      });
      child.once('close', (code, signal) => {
        clearTimeout(timer);
        cancel?.removeEventListener('abort', onAbort);
        if (cancel?.aborted) {
          reject(abortReason(cancel));
          return;
        }
        if (timedOut) {
          reject(new IpmiError('unreachable', `cannot reach IPMI BMC at ${where}: no answer to "${commandText}" within ${timeoutMs} ms (timeout)`));
          return;
        }
        if (code === 0) {
          resolve({ stdout, stderr });
          return;
        }
        const err = classifyIpmitoolFailure(`${stderr}\n${stdout}`, where, commandText, opts.password);
        reject(signal ? new IpmiError(err.kind, `${err.message} (ipmitool killed by ${signal})`) : err);
      });
    });
  } finally {
    if (dir) await rm(dir, { recursive: true, force: true });
  }
}
