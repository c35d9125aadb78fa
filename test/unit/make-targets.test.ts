/**
 * What each make target installs: `make demo` (API mode) must not build the
 * Kubernetes binaries, whose first build is most of a fresh machine's wait,
 * nor wait for Jaeger's (the demo traces once it is built); `make demo-k8s`
 * and `make test` build both. Stack-free (`make -n`).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../config/env';

const commands = (target: string): string[] =>
  execFileSync('make', ['-n', '-s', target], { cwd: REPO_ROOT, encoding: 'utf8' }).split('\n').map((l) => l.trim()).filter(Boolean);

/** Every scripts/*.sh a command runs, and those they run in turn (install.sh is judged by its flags instead). */
function scriptsReached(cmds: string[]): Set<string> {
  const seen = new Set<string>();
  const queue = cmds.flatMap((c) => [...c.matchAll(/scripts\/([\w-]+\.sh)/g)].map((m) => m[1]!));
  while (queue.length > 0) {
    const s = queue.pop()!;
    if (seen.has(s)) continue;
    seen.add(s);
    if (s === 'install.sh') continue;
    const text = readFileSync(join(REPO_ROOT, 'scripts', s), 'utf8');
    for (const m of text.matchAll(/scripts\/([\w-]+\.sh)/g)) queue.push(m[1]!);
  }
  return seen;
}

describe('make targets install what their command needs', () => {
  it('make demo and make stack-up skip the Kubernetes build, the test server and the Jaeger build, and reach no Kubernetes script', () => {
    for (const target of ['demo', 'stack-up']) {
      const cmds = commands(target);
      const installs = cmds.filter((c) => c.includes('scripts/install.sh'));
      expect(installs, target).toEqual(['bash scripts/install.sh --skip-kube --skip-test-server --skip-jaeger']);
      const reached = scriptsReached(cmds);
      expect(reached.has('kube-build.sh') || reached.has('kube.sh'), `${target} reaches ${[...reached].join(', ')}`).toBe(false);
    }
  });

  it('make demo-k8s and make test install the Kubernetes binaries (built once, cached by kube-build.sh)', () => {
    for (const target of ['demo-k8s', 'test']) {
      const installs = commands(target).filter((c) => c.includes('scripts/install.sh'));
      expect(installs, target).toEqual(['bash scripts/install.sh']);
    }
  });

  it('make stack-down stops kube-apiserver and etcd too (make demo-k8s starts them)', () => {
    expect(commands('stack-down')).toContain('bash scripts/kube.sh stop');
  });
});
