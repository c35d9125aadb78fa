/**
 * Writes test-results/timing.json: when the run began, and when each file
 * started and ended in which group (vitest.config.ts: `suite`, two files at a
 * time, then `alone`, one at a time). vitest's JSON report has the files'
 * times but neither the group nor the time spent before the first file (the
 * global setup: the test stack's start and the workflow bundle), which
 * scripts/test-summary.mjs prints to show where a run's minutes went.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';

export const TIMING_REPORT = 'test-results/timing.json';

export interface FileTiming {
  file: string;
  group: string;
  startedAt: number;
  endedAt: number;
}

export interface RunTiming {
  /** When vitest had read its configuration, before the global setup. */
  initAt: number;
  files: FileTiming[];
  endedAt: number;
}

export default class TimingReporter implements Reporter {
  private initAt = Date.now();
  private readonly started = new Map<string, number>();
  private readonly files: FileTiming[] = [];

  onInit(): void {
    this.initAt = Date.now();
  }

  onTestModuleStart(m: TestModule): void {
    this.started.set(m.moduleId, Date.now());
  }

  onTestModuleEnd(m: TestModule): void {
    this.files.push({ file: m.relativeModuleId, group: m.project.name, startedAt: this.started.get(m.moduleId) ?? Date.now(), endedAt: Date.now() });
  }

  onTestRunEnd(): void {
    const timing: RunTiming = { initAt: this.initAt, files: this.files, endedAt: Date.now() };
    mkdirSync(dirname(TIMING_REPORT), { recursive: true });
    writeFileSync(TIMING_REPORT, `${JSON.stringify(timing, null, 2)}\n`);
  }
}
