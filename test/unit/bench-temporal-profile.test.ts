/**
 * The bench's Temporal profiles without starting any (PostgreSQL stays out of
 * `make test`): the options that pick them and the worker count, the worker
 * figures over several processes, PostgreSQL's CPU read as a process tree,
 * and temporal-pg.sh refusing membership ports Temporal cannot store.
 */
import { execFileSync, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../config/env';
import { parseOptions } from '../../bench/options';
import { ProcWatch, readProc, readProcTree, type ProcSample } from '../../bench/procs';
import { totalCpu } from '../../bench/temporal-profile';
import { WorkerWatch } from '../../bench/worker-watch';

const HELP = new URL('../../bench/run.ts', import.meta.url);
const parse = (...argv: string[]) => parseOptions(argv, HELP);

describe('bench --temporal and --workers', () => {
  it('runs the dev server with one worker unless told otherwise', () => {
    expect(parse()).toMatchObject({ temporal: 'dev', workers: 1 });
  });

  it('runs two workers on PostgreSQL (issue 17 profile), overridable', () => {
    expect(parse('--temporal', 'postgres')).toMatchObject({ temporal: 'postgres', workers: 2 });
    expect(parse('--temporal', 'postgres', '--workers', '1')).toMatchObject({ temporal: 'postgres', workers: 1 });
    expect(parse('--workers', '3')).toMatchObject({ temporal: 'dev', workers: 3 });
  });

  it('names what it accepts for a wrong profile or worker count', () => {
    expect(() => parse('--temporal', 'sqlite')).toThrow('--temporal must be one of dev, postgres, got "sqlite"');
    expect(() => parse('--workers', '0')).toThrow('--workers must be a positive integer, got "0"');
  });
});

describe('bench CPU and memory accounting', () => {
  const fixed = (s: ProcSample) => new ProcWatch('w', () => s);

  it('sums CPU over workers and keeps the largest RSS, each worker recorded', () => {
    const ws = new WorkerWatch([fixed({ rssMiB: 200, hwmMiB: 250, cpuSeconds: 3 }), fixed({ rssMiB: 300, hwmMiB: 310, cpuSeconds: 4.5 })]);
    expect(ws.cpuSeconds()).toBe(7.5);
    expect(ws.rssMiB()).toBe(300);
    ws.stop();
    expect(ws.figures()).toEqual({
      peakRssMiB: 310,
      cpuSeconds: 7.5,
      processes: 2,
      perProcess: [
        { peakRssMiB: 250, cpuSeconds: 3 },
        { peakRssMiB: 310, cpuSeconds: 4.5 },
      ],
    });
    expect(totalCpu({ server: 11.5, postgres: 6.25 })).toBe(17.75);
  });

  it('one worker keeps the old result shape', () => {
    const ws = new WorkerWatch([fixed({ rssMiB: 200, hwmMiB: 250, cpuSeconds: 3 })]);
    ws.stop();
    expect(ws.figures()).toEqual({ peakRssMiB: 250, cpuSeconds: 3 });
  });

  it("counts a process's children (PostgreSQL's backends) in its tree", async () => {
    // A postmaster stand-in: a shell with two children that do not change while read.
    const root = spawn('sh', ['-c', 'sleep 30 & sleep 30 & wait'], { stdio: 'ignore' });
    try {
      const kids = (): number[] =>
        readdirSync('/proc')
          .filter((e) => /^\d+$/.test(e))
          .filter((e) => {
            try {
              return readFileSync(`/proc/${e}/stat`, 'utf8').split(') ')[1]!.split(' ')[1] === String(root.pid);
            } catch {
              return false;
            }
          })
          .map(Number);
      for (let i = 0; i < 500 && kids().length < 2; i++) await new Promise((r) => setTimeout(r, 20));
      const parts = [root.pid!, ...kids()].map((pid) => readProc(pid)!);
      expect(parts).toHaveLength(3);
      const tree = readProcTree(root.pid!)!;
      expect(tree.rssMiB).toBeCloseTo(parts.reduce((a, p) => a + p.rssMiB, 0), 6);
      expect(tree.rssMiB).toBeGreaterThan(readProc(root.pid!)!.rssMiB);
    } finally {
      root.kill();
    }
  });
});

describe('scripts/temporal-pg.sh', () => {
  it('refuses membership ports above 32767 (Temporal stores them as SMALLINT) before starting anything', () => {
    let err: { status?: number; stderr?: string } = {};
    try {
      execFileSync('bash', [join(REPO_ROOT, 'scripts', 'temporal-pg.sh'), 'status'], {
        env: { ...process.env, TEMPORAL_PG_MEMBERSHIP_PORT_BASE: '33506', TEMPORAL_PG_STATE_DIR: '/nonexistent/temporal-pg' },
        stdio: ['ignore', 'pipe', 'pipe'],
        encoding: 'utf8',
      });
    } catch (e) {
      err = e as typeof err;
    }
    expect(err.status).toBe(1);
    expect(err.stderr).toContain('TEMPORAL_PG_MEMBERSHIP_PORT_BASE must be a number from 1024 to 32764');
  });
});
