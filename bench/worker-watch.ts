/**
 * The worker figures of a run with one or more worker processes on the same
 * task queue (--workers N): CPU summed over them; RSS of the largest, since
 * the memory target is per worker process (each caches only the hosts it
 * runs), with each process's own figures beside it.
 */
import type { ProcWatch } from './procs';

export interface WorkerProcFigures {
  peakRssMiB: number;
  cpuSeconds: number;
}

export interface WorkerFigures extends WorkerProcFigures {
  /** Worker processes (absent in results from before --workers: one). */
  processes?: number;
  /** Each worker's own figures when there are several. */
  perProcess?: WorkerProcFigures[];
}

export class WorkerWatch {
  constructor(private readonly watches: ProcWatch[]) {}

  /** CPU seconds of all workers so far. */
  cpuSeconds(): number {
    return this.watches.reduce((sum, w) => sum + (w.sample()?.cpuSeconds ?? 0), 0);
  }

  /** Resident set of the largest worker now, MiB. */
  rssMiB(): number {
    return Math.max(0, ...this.watches.map((w) => w.sample()?.rssMiB ?? 0));
  }

  stop(): void {
    for (const w of this.watches) w.stop();
  }

  figures(): WorkerFigures {
    const per = this.watches.map((w) => ({ peakRssMiB: w.peakRssMiB, cpuSeconds: w.last?.cpuSeconds ?? 0 }));
    return {
      peakRssMiB: Math.max(0, ...per.map((p) => p.peakRssMiB)),
      cpuSeconds: per.reduce((sum, p) => sum + p.cpuSeconds, 0),
      ...(per.length > 1 ? { processes: per.length, perProcess: per } : {}),
    };
  }
}
