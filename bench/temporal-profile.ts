/**
 * Which Temporal the bench drives (`--temporal dev|postgres`): the dev server of
 * the bench stack (scripts/stack.sh, SQLite), or Temporal server built from the
 * go.temporal.io/server module on PostgreSQL (scripts/temporal-pg.sh, ports
 * 21500.. plus METALFLOW_BENCH_PORT_OFFSET). Either way: its address, whether
 * this run started it, its CPU seconds (the PostgreSQL profile counts the
 * server's process group and PostgreSQL's postmaster with its children) and what to record in the result.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../config/env';
import { BENCH_PORTS, BENCH_STATE_DIR, TEMPORAL_ADDRESS, readProcGroup, readProcTree, servicePid, stack, stackRunning } from './procs';

export const TEMPORAL_PROFILES = ['dev', 'postgres'] as const;
export type TemporalProfileName = (typeof TEMPORAL_PROFILES)[number];

/** Recorded in the result JSON: which Temporal ran the workflows. */
export interface TemporalServerInfo {
  profile: TemporalProfileName;
  /** e.g. "temporal version 1.9.1 (Server 1.32.0, UI 2.54.1)" or "temporal-server 1.32.0". */
  server: string;
  persistence: string;
  address: string;
  /** CPU seconds of each counted part from the first create to the end of the last phase, idle sampling included (postgres: server, postgres). */
  cpuSecondsByPart?: Record<string, number>;
}

export interface TemporalProfile {
  readonly name: TemporalProfileName;
  readonly address: string;
  /** Starts the server unless it runs; true when this call started it. */
  ensureRunning(): boolean;
  stop(): void;
  /** CPU seconds of the server's process groups, by part. */
  cpuByPart(): Record<string, number>;
  info(): TemporalServerInfo;
}

export function parseTemporalProfile(v: string | undefined): TemporalProfileName {
  if (v === undefined) return 'dev';
  if ((TEMPORAL_PROFILES as readonly string[]).includes(v)) return v as TemporalProfileName;
  throw new Error(`--temporal must be one of ${TEMPORAL_PROFILES.join(', ')}, got "${v}"`);
}

const firstLine = (cmd: string, args: string[]): string => {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).split('\n')[0]!.trim();
  } catch {
    return 'unknown';
  }
};

const cpuOfGroup = (pid: number | undefined): number => (pid === undefined ? 0 : (readProcGroup(pid)?.cpuSeconds ?? 0));

function devProfile(): TemporalProfile {
  return {
    name: 'dev',
    address: TEMPORAL_ADDRESS,
    ensureRunning() {
      if (stackRunning().has('temporal')) return false;
      stack(['start', 'temporal']);
      return true;
    },
    stop: () => void stack(['stop', 'temporal']),
    cpuByPart: () => ({ server: cpuOfGroup(servicePid('temporal')) }),
    info: () => ({
      profile: 'dev',
      server: firstLine(join(REPO_ROOT, '.venv', 'bin', 'temporal'), ['--version']),
      persistence: 'SQLite file (temporal server start-dev)',
      address: TEMPORAL_ADDRESS,
    }),
  };
}

/** PostgreSQL ports from 21500 (+ the bench offset), apart from every other bench port. */
export const PG_PORT_BASE = 21500 + (BENCH_PORTS.temporal - 21233);

function postgresProfile(): TemporalProfile {
  const stateDir = join(BENCH_STATE_DIR, 'temporal-pg');
  // One node: the CPU figures below read node 0's process group.
  const env = { ...process.env, TEMPORAL_PG_STATE_DIR: stateDir, TEMPORAL_PG_PORT_BASE: String(PG_PORT_BASE), TEMPORAL_PG_NODES: '1' };
  const script = join(REPO_ROOT, 'scripts', 'temporal-pg.sh');
  const run = (cmd: string): string => execFileSync('bash', [script, cmd], { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const address = `127.0.0.1:${PG_PORT_BASE + 1}`;
  const pidOf = (file: string): number | undefined => {
    if (!existsSync(file)) return undefined;
    const pid = Number(readFileSync(file, 'utf8').split('\n')[0]!.trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  };
  const running = (): boolean => {
    try {
      run('status');
      return true;
    } catch {
      return false;
    }
  };
  return {
    name: 'postgres',
    address,
    ensureRunning() {
      if (running()) return false;
      process.stderr.write(run('start'));
      return true;
    },
    stop: () => void run('stop'),
    cpuByPart: () => ({
      server: cpuOfGroup(pidOf(join(stateDir, 'run', 'temporal.pid'))),
      postgres: ((pid) => (pid === undefined ? 0 : (readProcTree(pid)?.cpuSeconds ?? 0)))(pidOf(join(stateDir, 'run', 'postgres.pid'))),
    }),
    info: () => {
      const bin = firstLine('bash', [script, 'version']);
      return {
        profile: 'postgres',
        // `temporal-server --version` prints "temporal version 1.32.0".
        server: `Temporal server ${firstLine(join(REPO_ROOT, '.cache', 'temporal-pg', bin, 'temporal-server'), ['--version']).replace(/^temporal version /, '')} (go.temporal.io/server ${bin})`,
        persistence: `PostgreSQL (${firstLine('postgres', ['--version'])}), temporal + temporal_visibility databases`,
        address,
      };
    },
  };
}

export function temporalProfile(name: TemporalProfileName): TemporalProfile {
  return name === 'postgres' ? postgresProfile() : devProfile();
}

/** Sum of a profile's parts: the Temporal CPU figure of the report. */
export const totalCpu = (parts: Record<string, number>): number => Object.values(parts).reduce((a, b) => a + b, 0);
