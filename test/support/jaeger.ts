/**
 * Jaeger v2 (scripts/jaeger.sh, built from Go modules by scripts/install.sh) as a real
 * trace backend: OTLP/HTTP in, its query API out, in memory, on loopback ports of the
 * test's own.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../../config/env';
import { unusedPort } from './ports';
import { waitFor } from './harness';

const SCRIPT = join(REPO_ROOT, 'scripts', 'jaeger.sh');

/** Why Jaeger cannot run here, or undefined when it can (`make test` builds it). */
export function jaegerUnavailable(): string | undefined {
  return spawnSync('bash', [SCRIPT, 'path'], { stdio: 'ignore' }).status === 0 ? undefined : 'Jaeger is not built (bash scripts/jaeger.sh install)';
}

/** A span as Jaeger's query API (`/api/traces/<id>`) returns it. */
export interface JaegerSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  references: { refType: string; traceID: string; spanID: string }[];
  tags: { key: string; type: string; value: unknown }[];
  processID: string;
}
export interface JaegerTrace {
  traceID: string;
  spans: JaegerSpan[];
  processes: Record<string, { serviceName: string; tags: { key: string; value: unknown }[] }>;
}

export interface Jaeger {
  /** Where to send OTLP/HTTP (the base: `/v1/traces` is added by the exporter's settings). */
  otlpEndpoint: string;
  queryUrl: string;
  /** The trace as Jaeger holds it now; undefined while it has none of its spans. */
  trace(traceId: string): Promise<JaegerTrace | undefined>;
  stop(): Promise<void>;
}

export async function startJaeger(): Promise<Jaeger> {
  const dir = mkdtempSync(join(tmpdir(), 'metalflow-jaeger-'));
  const [otlp, query] = [await unusedPort(), await unusedPort()];
  const child: ChildProcess = spawn('bash', [SCRIPT, 'run', dir, String(otlp), String(query)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => void (stderr += d.toString()));
  const queryUrl = `http://127.0.0.1:${query}`;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  await waitFor(
    'Jaeger answering on its query port',
    async () => {
      if (child.exitCode !== null) throw new Error(`Jaeger exited (${child.exitCode}): ${stderr.slice(-2000)}`);
      return (await fetch(`${queryUrl}/api/services`).catch(() => undefined))?.ok || undefined;
    },
    { timeoutMs: 30_000 },
  );
  return {
    otlpEndpoint: `http://127.0.0.1:${otlp}`,
    queryUrl,
    async trace(traceId) {
      const res = await fetch(`${queryUrl}/api/traces/${traceId}`);
      if (res.status === 404) return undefined;
      if (!res.ok) throw new Error(`Jaeger GET /api/traces/${traceId}: HTTP ${res.status}`);
      return ((await res.json()) as { data: JaegerTrace[] }).data[0];
    },
    async stop() {
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
