/**
 * The documentation checks (scripts/docs/check-docs.ts) on the repository's
 * docs, and on planted faults to show each check finds what it is for.
 * Stack-free.
 */
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../config/env';
import { anchors, checkDocs, linkProblems, nameProblems, type Known } from '../../scripts/docs/check-docs';

describe('documentation', () => {
  it('README.md, CHANGELOG.md, docs/ and the benchmark records: links, anchors, targets, variables and the README budget hold', () => {
    expect(checkDocs(REPO_ROOT).map((p) => `${p.file}:${p.line}: ${p.problem}`)).toEqual([]);
  });
});

describe('the checks find planted faults', () => {
  const files: Record<string, string> = {
    'docs/a.md': '# A page\n\n## Run the demo\n\n## Run the demo\n',
  };
  const exists = (p: string): boolean => p in files || p === 'docs';
  const read = (p: string): string | undefined => files[p];

  it('a link to a missing file, and one to a missing anchor', () => {
    const text = 'See [b](b.md), [a](a.md#run-the-demo), [a again](a.md#run-the-demo-1) and [gone](a.md#no-such-heading).\n```\n[in code](nowhere.md)\n```\n';
    expect(linkProblems('docs/x.md', text, exists, read).map((p) => p.problem)).toEqual([
      'link to b.md: docs/b.md does not exist',
      'link to a.md#no-such-heading: docs/a.md has no heading #no-such-heading',
    ]);
  });

  it('GitHub anchors: punctuation dropped, spaces to hyphens, duplicates numbered', () => {
    expect([...anchors('# The `direct` provisioner (no Ironic)\n## Power, reboots\n## Power, reboots\n')]).toEqual([
      'the-direct-provisioner-no-ironic',
      'power-reboots',
      'power-reboots-1',
    ]);
  });

  it('a make target, an npm script and a variable that do not exist', () => {
    const known: Known = { makeTargets: new Set(['demo']), npmScripts: new Set(['bench']), variableKnown: (n) => n === 'METALFLOW_API_PORT' || n === 'IRONIC_URL' };
    const text = 'Run `make demo`, then `make demo-everything` and `npm run bench`, `npm run benchmark`.\nSet `METALFLOW_API_PORT`, `IRONIC_URL`, METALFLOW_API_PROT and `IRONIC_ULR`.\n';
    expect(nameProblems('README.md', text, known).map((p) => p.problem)).toEqual([
      'make demo-everything: no such Makefile target',
      'npm run benchmark: no such package.json script',
      'METALFLOW_API_PROT: no such variable in config/, the processes, scripts or tests',
      'IRONIC_ULR: no such variable in config/, the processes, scripts or tests',
    ]);
  });
});
