/**
 * Top functions by self time in a V8 .cpuprofile (from `npm run bench -- --profile`):
 *   node --import tsx bench/profile-top.ts <file.cpuprofile> [count]
 */
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}
const [file, count = '25'] = process.argv.slice(2);
if (!file) throw new Error('usage: profile-top.ts <file.cpuprofile> [count]');
const prof = JSON.parse(readFileSync(file, 'utf8')) as { nodes: Node[]; samples: number[]; timeDeltas: number[] };
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const self = new Map<string, number>();
let total = 0;
prof.samples.forEach((id, i) => {
  const n = byId.get(id)!;
  const dt = prof.timeDeltas[i] ?? 0;
  total += dt;
  const key = `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.replace(/^.*node_modules\//, '~/').replace(/^file:\/\/\/work\/main\//, '')}:${n.callFrame.lineNumber + 1}`;
  self.set(key, (self.get(key) ?? 0) + dt);
});
console.log(`total sampled ${(total / 1e6).toFixed(1)} s`);
for (const [k, v] of [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, Number(count))) {
  console.log(`${((100 * v) / total).toFixed(1).padStart(5)}%  ${(v / 1e6).toFixed(2).padStart(7)} s  ${k}`);
}
