/**
 * The API call -> first activity figures of a run, recomputed from its API log (fastify's
 * "incoming request" / "request completed" lines) and Temporal: for a run that failed before
 * its report (the figures are read at the end). The request's arrival at the API stands for
 * "sent" (loopback: the difference is the driver's own event loop).
 *
 *   node --import tsx bench/api-log-breakdown.ts <run dir> <temporal address> <namespace>
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { temporalFigures } from './temporal';
import type { ApiCall } from './metalflow';

const [runDir, address, namespace] = process.argv.slice(2);
if (!runDir || !address || !namespace) throw new Error('usage: api-log-breakdown.ts <run dir> <temporal address> <namespace>');
const incoming = new Map<string, { time: number; method: string; url: string }>();
const calls: ApiCall[] = [];
for (const line of readFileSync(join(runDir, 'api.log'), 'utf8').split('\n')) {
  if (!line.startsWith('{')) continue;
  const e = JSON.parse(line) as { time: number; reqId?: string; msg: string; req?: { method: string; url: string }; res?: { statusCode: number }; responseTime?: number };
  if (!e.reqId) continue;
  if (e.msg === 'incoming request' && e.req) incoming.set(e.reqId, { time: e.time, method: e.req.method, url: e.req.url });
  if (e.msg !== 'request completed') continue;
  const req = incoming.get(e.reqId);
  if (!req) continue;
  const m = /^\/v1\/namespaces\/[^/]+\/hosts\/([^/]+)(\/image)?$/.exec(req.url);
  if (!m) continue;
  const phase = m[2] ? (req.method === 'PUT' ? 'provisioned' : 'deprovisioned') : req.method === 'PUT' ? 'available' : 'gone';
  if (calls.some((c) => c.host === m[1] && c.phase === phase)) continue;
  calls.push({ host: m[1]!, phase, method: req.method, path: req.url, status: e.res?.statusCode ?? 0, sentAt: req.time, respondedAt: req.time + (e.responseTime ?? 0) });
}
const hosts = new Set(calls.map((c) => c.host)).size;
const t = await temporalFigures(address, namespace, calls, hosts);
const row = (p: { p50: number; p95: number; p99: number; max: number } | undefined): string => (p ? `p50 ${Math.round(p.p50)}  p95 ${Math.round(p.p95)}  p99 ${Math.round(p.p99)}  max ${Math.round(p.max)}` : '-');
console.log(`${hosts} hosts, ${calls.length} calls`);
console.log(`create -> first activity: ${row(t.apiToFirstActivityMs.create.fromRequest)}`);
console.log(`  from reply:             ${row(t.apiToFirstActivityMs.create.fromResponse)}`);
console.log(`set image -> first activity: ${row(t.apiToFirstActivityMs.setImage.fromRequest)}`);
for (const [k, v] of Object.entries(t.createBreakdownMs)) console.log(`  ${k.padEnd(36)} ${row(v)}`);
if (t.setImageBreakdownMs) {
  console.log('set image:');
  for (const [k, v] of Object.entries(t.setImageBreakdownMs)) console.log(`  ${k.padEnd(36)} ${row(v)}`);
}
