/**
 * The bench's request log (METALFLOW_BENCH_REQUEST_LOG): every Ironic request of a phase, one JSON line each,
 * written by bench/measure.ts and read by the tools that follow one node's requests (agent-states.ts, delete-gap.ts).
 */
import { readFileSync } from 'node:fs';

export interface RequestLogLine {
  driver: string;
  phase: string;
  method: string;
  path: string;
  at: number;
  /** Ironic's answer; unset when none came. */
  status?: number;
  answeredAt?: number;
}

export function requestLogLine(line: RequestLogLine): string {
  return `${JSON.stringify(line)}\n`;
}

export function readRequestLog(path: string): RequestLogLine[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as RequestLogLine);
}
