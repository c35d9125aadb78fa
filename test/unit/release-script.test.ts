/**
 * scripts/release.mjs on small checkouts of its own: what it says of each
 * patch by the release that brought it, and of none at all.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../config/env';

function checkout(version: string, workflow: string): string {
  const root = mkdtempSync(join(tmpdir(), 'metalflow-release-'));
  mkdirSync(join(root, 'workflows'));
  writeFileSync(join(root, 'package.json'), JSON.stringify({ version }));
  writeFileSync(join(root, 'workflows', 'host.ts'), workflow);
  return root;
}

const run = (root: string) => spawnSync(process.execPath, [join(REPO_ROOT, 'scripts', 'release.mjs'), '--root', root], { encoding: 'utf8' });

describe('scripts/release.mjs', () => {
  it('says there are none when no workflow code asks a patch', () => {
    const r = run(checkout('0.1.0', 'export const x = 1;\n'));
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('metalflow 0.1.0');
    expect(r.stdout).toContain('No patched() or deprecatePatch() calls');
  });

  it('keeps, deprecates or removes each patch by the release that brought it, with the query to run first', () => {
    const code = [
      "// patch since v0.1.0",
      "if (patched('old-rule')) a();",
      "if (patched('this-rule')) b(); // patch since v0.2.0",
      "// patch since v0.3.0",
      "if (patched('next-rule')) c();",
      "// deprecated since v0.1.0",
      "deprecatePatch('gone-rule');",
    ].join('\n');
    const r = run(checkout('0.2.0', code));
    expect(r.status).toBe(0);
    const said = (id: string) => r.stdout.split('\n').findIndex((l) => l.includes(`('${id}')`));
    const verdict = (id: string) => r.stdout.split('\n')[said(id) + 1];
    expect(verdict('old-rule')).toContain('may be deprecated');
    expect(verdict('this-rule')).toContain('keep: brought by this release');
    expect(verdict('next-rule')).toContain('keep: not released yet');
    expect(verdict('gone-rule')).toContain('may be removed');
    expect(r.stdout).toContain(`temporal workflow count --namespace default --query "ExecutionStatus = 'Running' AND StartTime < '<RFC 3339 time v0.1.0 was rolled out>'"`);
  });

  it('refuses a patch without the release that brought it', () => {
    const r = run(checkout('0.1.0', "if (patched('nameless')) a();\n"));
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/workflows\/host\.ts:1: patched\('nameless'\) has no "\/\/ patch since vX\.Y\.Z" comment/);
  });

  it("passes on this repository's own workflows: every patch says the release that brought it", () => {
    const r = run(REPO_ROOT);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });
});
