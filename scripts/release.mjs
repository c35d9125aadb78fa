#!/usr/bin/env node
/**
 * The release rule for workflow code, as a check (docs/contributing.md, "Changing workflow code").
 *
 *   npm run release            # this checkout
 *   node scripts/release.mjs --root <dir> [--namespace <ns>]
 *
 * Reads the version from package.json (tags need not be kept) and lists every patched(id) and
 * deprecatePatch(id) under workflows/ with the release that brought it. Each call carries that
 * release in a comment on its line or the line above: `// patch since v0.2.0` for patched(),
 * `// deprecated since v0.3.0` for deprecatePatch(). Per id it says:
 *   keep                 not released yet, or brought by this release;
 *   may be deprecated    patched() brought by an earlier release: turn it into deprecatePatch(id)
 *                        once no open run started before that release was rolled out (the query);
 *   may be removed       deprecatePatch() brought by an earlier release, on the same condition.
 * Exits 1 when a call has no such comment, or ids disagree about their release. Tags nothing and
 * bumps nothing.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] ? args[i + 1] : fallback;
};
const root = opt('--root', join(fileURLToPath(new URL('.', import.meta.url)), '..'));
const namespace = opt('--namespace', 'default');

const version = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version;
if (!/^\d+\.\d+\.\d+$/.test(version ?? '')) {
  console.error(`package.json: version must be x.y.z, got ${JSON.stringify(version)}`);
  process.exit(1);
}

/** -1, 0, 1 as a is before, the same as, after b (x.y.z). */
function compare(a, b) {
  const [x, y] = [a, b].map((v) => v.split('.').map(Number));
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i] < y[i] ? -1 : 1;
  return 0;
}

function sources(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return /\.(ts|mts|js|mjs)$/.test(name) ? [path] : [];
  });
}

const CALL = /\b(patched|deprecatePatch)\(\s*(['"`])([^'"`]+)\2\s*\)/g;
const SINCE = { patched: /\bpatch since v(\d+\.\d+\.\d+)\b/, deprecatePatch: /\bdeprecated since v(\d+\.\d+\.\d+)\b/ };

const found = new Map();
const problems = [];
for (const file of sources(join(root, 'workflows'))) {
  const lines = readFileSync(file, 'utf8').split('\n');
  lines.forEach((line, i) => {
    for (const m of line.matchAll(CALL)) {
      const [, kind, , id] = m;
      const where = `${relative(root, file)}:${i + 1}`;
      const since = (line.match(SINCE[kind]) ?? (lines[i - 1] ?? '').match(SINCE[kind]))?.[1];
      if (!since) {
        problems.push(`${where}: ${kind}('${id}') has no "// ${kind === 'patched' ? 'patch' : 'deprecated'} since vX.Y.Z" comment on its line or the line above`);
        continue;
      }
      const key = `${kind} ${id}`;
      const seen = found.get(key);
      if (seen && seen.since !== since) problems.push(`${where}: ${kind}('${id}') says v${since}, ${seen.where} says v${seen.since}`);
      if (!seen) found.set(key, { kind, id, since, where });
    }
  });
}

console.log(`metalflow ${version}: workflow patches under workflows/`);
if (found.size === 0 && problems.length === 0) {
  console.log('No patched() or deprecatePatch() calls: nothing to deprecate or remove.');
  process.exit(0);
}

const query = (since) =>
  `temporal workflow count --namespace ${namespace} --query "ExecutionStatus = 'Running' AND StartTime < '<RFC 3339 time v${since} was rolled out>'"`;

const rows = [...found.values()].sort((a, b) => compare(a.since, b.since) || a.id.localeCompare(b.id));
for (const r of rows) {
  const age = compare(r.since, version);
  const head = `${r.kind === 'patched' ? 'patched' : 'deprecatePatch'}('${r.id}')  since v${r.since}  ${r.where}`;
  if (age > 0) console.log(`${head}\n  keep: not released yet (v${r.since} is after ${version})`);
  else if (age === 0) {
    const next = r.kind === 'patched' ? 'deprecatePatch() in the next release' : 'removed in the next release';
    console.log(`${head}\n  keep: brought by this release; may become ${next} once this shows 0:\n    ${query(r.since)}`);
  } else if (r.kind === 'patched') {
    console.log(`${head}\n  may be deprecated: replace it by deprecatePatch('${r.id}') (comment "deprecated since v<next release>") once this shows 0:\n    ${query(r.since)}`);
  } else {
    console.log(`${head}\n  may be removed: delete the call and keep only the new branch once this shows 0:\n    ${query(r.since)}`);
  }
}
for (const p of problems) console.error(`error: ${p}`);
process.exit(problems.length > 0 ? 1 : 0);
