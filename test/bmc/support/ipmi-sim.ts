/**
 * IPMI peers for the tests, on 127.0.0.1:
 * - OpenIPMI's `ipmi_sim` (Debian `openipmi`) with a lan.conf (user
 *   admin/password, lanplus) whose `chassis_control` program
 *   (scripts/ipmi-chassis-control.sh) keeps power and boot state in files we can read;
 * - pyghmi's server-side BMC (Debian `python3-pyghmi`) that records the raw
 *   boot-flags bytes ipmi_sim's chassis_control never sees.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
// Shared with the demo's simulator (scripts/ipmi-sim.sh).
export const CHASSIS_CONTROL = join(HERE, '..', '..', '..', 'scripts', 'ipmi-chassis-control.sh');
export const PYGHMI_RECORDER = join(HERE, 'pyghmi-boot-recorder.py');

export const IPMI_USER = 'admin';
export const IPMI_PASSWORD = 'password';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function requireTool(bin: string, pkg: string): void {
  const r = spawnSync('sh', ['-c', `command -v ${bin}`]);
  if (r.status !== 0) throw new Error(`${bin} not found: install the Debian package ${pkg} (scripts/apt-packages.txt)`);
}

/** Answers once a lanplus `chassis power status` succeeds (the simulator is up). */
async function waitForIpmi(port: number, child: ChildProcess, what: string, log: () => string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${what} exited (${child.exitCode}) during start: ${log()}`);
    const r = spawnSync(
      'ipmitool',
      ['-I', 'lanplus', '-C', '3', '-H', '127.0.0.1', '-p', String(port), '-U', IPMI_USER, '-E', '-N', '1', '-R', '1', 'chassis', 'power', 'status'],
      { env: { PATH: process.env.PATH, IPMI_PASSWORD }, encoding: 'utf8', timeout: 5_000 },
    );
    if (r.status === 0) return;
    await sleep(100);
  }
  throw new Error(`${what} on 127.0.0.1:${port} did not answer within 10 s: ${log()}`);
}

export interface IpmiSim {
  port: number;
  dir: string;
  pid: number;
  /** Contents of a state file written by ipmi-chassis-control.sh, trimmed ('' when absent). */
  file(name: 'power' | 'boot' | 'reset' | 'shutdown' | 'calls.log'): string;
  /** The `set`/`get` calls ipmi_sim made to the chassis_control program. */
  calls(): string[];
  setPowerFile(value: '0' | '1'): void;
  setSoftDelay(value: string): void;
  clearCalls(): void;
  pause(): void;
  resume(): void;
  stop(): Promise<void>;
}

/**
 * Starts ipmi_sim on 127.0.0.1:<port>. With `chassisControl: false` the BMC
 * has no way to control power (ipmi_sim answers "invalid data field" to power
 * and boot commands), for the unsupported paths.
 */
export async function startIpmiSim(port: number, opts: { chassisControl?: boolean } = {}): Promise<IpmiSim> {
  requireTool('ipmi_sim', 'openipmi');
  requireTool('ipmitool', 'ipmitool');
  const dir = mkdtempSync(join(tmpdir(), `metalflow-ipmisim-${port}-`));
  const chassis = opts.chassisControl !== false;
  const lanConf = [
    `name "mfbmc${port}"`,
    'set_working_mc 0x20',
    '  startlan 1',
    `    addr 127.0.0.1 ${port}`,
    '    priv_limit admin',
    '    allowed_auths_callback none md2 md5 straight',
    '    allowed_auths_user none md2 md5 straight',
    '    allowed_auths_operator none md2 md5 straight',
    '    allowed_auths_admin none md2 md5 straight',
    '    guid a123456789abcdefa123456789abcdef',
    '  endlan',
    chassis ? `  chassis_control "/bin/sh ${CHASSIS_CONTROL} ${dir}"` : '',
    `  user 2 true "${IPMI_USER}" "${IPMI_PASSWORD}" admin 10 none md2 md5 straight`,
    '',
  ].join('\n');
  writeFileSync(join(dir, 'lan.conf'), lanConf);
  writeFileSync(join(dir, 'sim.emu'), 'mc_setbmc 0x20\nmc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02\nmc_enable 0x20\n');
  writeFileSync(join(dir, 'power'), '0\n');
  const logPath = join(dir, 'ipmi_sim.log');
  const out = openSync(logPath, 'a');
  const child = spawn('ipmi_sim', ['-c', join(dir, 'lan.conf'), '-f', join(dir, 'sim.emu'), '-s', dir, '-n'], {
    stdio: ['ignore', out, out],
  });
  const log = () => (existsSync(logPath) ? readFileSync(logPath, 'utf8').slice(-2000) : '');
  // Without chassis_control `power status` still answers (power off).
  await waitForIpmi(port, child, 'ipmi_sim', log);
  const read = (name: string) => {
    const p = join(dir, name);
    return existsSync(p) ? readFileSync(p, 'utf8').trim() : '';
  };
  return {
    port,
    dir,
    pid: child.pid!,
    file: read,
    calls: () => read('calls.log').split('\n').filter(Boolean).map((l) => l.replace(/^\S+ /, '')),
    setPowerFile: (value) => writeFileSync(join(dir, 'power'), `${value}\n`),
    setSoftDelay: (value) => writeFileSync(join(dir, 'soft_delay'), `${value}\n`),
    clearCalls: () => writeFileSync(join(dir, 'calls.log'), ''),
    pause: () => process.kill(child.pid!, 'SIGSTOP'),
    resume: () => process.kill(child.pid!, 'SIGCONT'),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        try {
          process.kill(child.pid!, 'SIGCONT');
        } catch {
          // already gone
        }
        child.kill('SIGTERM');
        const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
        await Promise.race([exited, sleep(3_000)]);
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface BootRecorder {
  port: number;
  /** Data bytes of every Set System Boot Options request, in order. */
  requests(): number[][];
  /** Only the boot-flags (parameter 5) requests. */
  bootFlags(): number[][];
  clear(): void;
  stop(): Promise<void>;
}

export async function startBootRecorder(port: number): Promise<BootRecorder> {
  requireTool('ipmitool', 'ipmitool');
  const probe = spawnSync('/usr/bin/python3', ['-c', 'import pyghmi.ipmi.bmc'], { encoding: 'utf8' });
  if (probe.status !== 0) throw new Error(`pyghmi is not importable by /usr/bin/python3: install the Debian package python3-pyghmi (${probe.stderr.trim()})`);
  const dir = mkdtempSync(join(tmpdir(), `metalflow-pyghmi-${port}-`));
  const record = join(dir, 'boot.jsonl');
  let stderr = '';
  const child = spawn('/usr/bin/python3', [PYGHMI_RECORDER, String(port), record], { stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  await waitForIpmi(port, child, 'pyghmi boot recorder', () => stderr);
  const requests = () =>
    existsSync(record)
      ? readFileSync(record, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => (JSON.parse(l) as { data: number[] }).data)
      : [];
  return {
    port,
    requests,
    bootFlags: () => requests().filter((d) => d[0] === 5),
    clear: () => writeFileSync(record, ''),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await Promise.race([new Promise<void>((resolve) => child.once('exit', () => resolve())), sleep(3_000)]);
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
