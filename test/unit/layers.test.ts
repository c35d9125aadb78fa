/**
 * The layer rules of .dependency-cruiser.cjs hold on the product code, and they are shown to catch
 * each kind of break on a small planted tree (a rule that matched nothing would pass silently).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CONFIG = join(ROOT, '.dependency-cruiser.cjs');
const CLI = join(ROOT, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs');
const LAYERS = ['model', 'contracts', 'control', 'workflows', 'activities', 'clients', 'config', 'api', 'k8s', 'workers', 'bench', 'scripts'];

interface Violation { rule: { name: string }; from: string; to: string }

function cruise(cwd: string, dirs: string[]): Violation[] {
  let out: string;
  try {
    out = execFileSync(process.execPath, [CLI, '--config', CONFIG, '--output-type', 'json', ...dirs], { cwd, encoding: 'utf8', maxBuffer: 64 << 20 });
  } catch (err) {
    // The CLI exits non-zero when it finds violations; its JSON is still on stdout.
    out = (err as { stdout?: string }).stdout ?? '';
    if (!out) throw err;
  }
  return (JSON.parse(out) as { summary: { violations: Violation[] } }).summary.violations;
}

describe('layers', () => {
  it('product code keeps the layer rules and has no import cycle', () => {
    const violations = cruise(ROOT, LAYERS);
    expect(violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`)).toEqual([]);
  }, 120_000);

  const planted = mkdtempSync(join(tmpdir(), 'mf-layers-'));
  afterAll(() => rmSync(planted, { recursive: true, force: true }));

  it('catches each kind of break in a planted tree', () => {
    const files: Record<string, string> = {
      'tsconfig.json': JSON.stringify({ compilerOptions: { module: 'ESNext', moduleResolution: 'Bundler', strict: true } }),
      'model/a.ts': "import { b } from '../workflows/b';\nexport const a = b;\n",
      'workflows/b.ts': "import { c } from '../clients/c';\nimport { e } from '../activities/e';\nimport { readFileSync } from 'node:fs';\nexport const b = [c, e, readFileSync];\n",
      'clients/c.ts': "import type { W } from '../workflows/w';\nexport const c: W = 1;\n",
      'workflows/w.ts': 'export type W = number;\n',
      'activities/e.ts': "import { w2 } from '../workflows/w2';\nexport const e = w2;\n",
      'workflows/w2.ts': 'export const w2 = 2;\n',
      'model/x.ts': "import type { Y } from './y';\nexport type X = Y[];\n",
      'model/y.ts': "import type { X } from './x';\nexport type Y = { x?: X };\n",
      'bench/t.ts': "import { s } from '../test/s';\nexport const t = s;\n",
      'test/s.ts': 'export const s = 1;\n',
    };
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(planted, path)), { recursive: true });
      writeFileSync(join(planted, path), text);
    }
    const found = new Set(cruise(planted, ['model', 'workflows', 'clients', 'activities', 'bench']).map((v) => v.rule.name));
    for (const rule of ['model-is-the-floor', 'workflows-decide', 'workflows-no-node', 'workflows-see-activity-types', 'clients-are-peers', 'activities-below-workflows', 'no-cycle', 'no-test-imports']) {
      expect(found, rule).toContain(rule);
    }
  }, 120_000);
});
