/**
 * scripts/kube.sh and scripts/kube-build.sh themselves: a second etcd +
 * kube-apiserver on free ports and a temporary state dir (beside the shared
 * test instance), idempotent start, status, env, restart, clear errors.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../config/env';
import { buildKube, KUBE_BUILD_TIMEOUT_MS, kubePaths } from './kube-harness';
import { unusedPort } from '../support/ports';

const KUBE_SH = join(REPO_ROOT, 'scripts', 'kube.sh');
const KUBE_BUILD_SH = join(REPO_ROOT, 'scripts', 'kube-build.sh');

let state: string;
let env: Record<string, string>;
const run = (...args: string[]) =>
  spawnSync('bash', [KUBE_SH, ...args], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 180_000 });

beforeAll(async () => {
  buildKube();
  state = mkdtempSync(join(tmpdir(), 'mf-kube-'));
  const [etcd, peer, api] = [await unusedPort(), await unusedPort(), await unusedPort()];
  env = { METALFLOW_KUBE_STATE_DIR: state, ETCD_PORT: String(etcd), ETCD_PEER_PORT: String(peer), KUBE_API_PORT: String(api) };
}, KUBE_BUILD_TIMEOUT_MS);

afterAll(() => {
  if (state) {
    run('stop');
    rmSync(state, { recursive: true, force: true });
  }
}, 120_000);

describe('scripts/kube-build.sh', () => {
  it('reports the pinned versions from the wrapper modules and finds everything built', () => {
    const paths = kubePaths();
    const gomod = readFileSync(join(REPO_ROOT, 'k8s', 'apiserver', 'go.mod'), 'utf8');
    expect(gomod).toMatch(new RegExp(`^\\s*k8s\\.io/kubernetes ${paths.kubeVersion.replace(/\./g, '\\.')}$`, 'm'));
    const minor = paths.kubeVersion.replace(/^v1\.(\d+)\.(\d+)$/, 'v0.$1.$2');
    // Every k8s.io staging module is pinned to the matching v0.x.y.
    const replaced = [...gomod.matchAll(/^\s+(k8s\.io\/\S+) => (\S+) (\S+)$/gm)];
    expect(replaced.length).toBeGreaterThan(25);
    for (const [, from, to, version] of replaced) {
      expect(to).toBe(from);
      expect(version).toBe(minor);
    }
    const check = spawnSync('bash', [KUBE_BUILD_SH, '--check'], { encoding: 'utf8' });
    expect(check.stdout).toContain('kube-apiserver: ok');
    expect(check.status).toBe(0);
    const version = spawnSync(paths.kubeApiserver, ['--version'], { encoding: 'utf8' });
    expect(version.stdout.trim()).toBe(`Kubernetes ${paths.kubeVersion}`);
    const kubectl = spawnSync(paths.kubectl, ['version', '--client', '-o', 'json'], { encoding: 'utf8' });
    expect(JSON.parse(kubectl.stdout).clientVersion.gitVersion).toBe(paths.kubeVersion);
    const etcd = spawnSync(paths.etcd, ['--version'], { encoding: 'utf8' });
    expect(etcd.stdout).toContain(`etcd Version: ${paths.etcdVersion.replace(/^v/, '')}`);
  });
});

describe('scripts/kube.sh', () => {
  it('says which binary is missing and how to build it', () => {
    const r = spawnSync('bash', [KUBE_SH, 'start'], {
      env: { ...process.env, ...env, METALFLOW_KUBE_CACHE: '/nonexistent-kube-cache' },
      encoding: 'utf8',
    });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/etcd: \/nonexistent-kube-cache\/etcd-v[\d.]+\/etcd not found; run scripts\/kube-build\.sh/);
  });

  it('refuses a taken port, naming the port and the service', async () => {
    const squatter: Server = createServer();
    await new Promise<void>((r) => squatter.listen(Number(env.KUBE_API_PORT), '127.0.0.1', r));
    try {
      const r = run('start');
      expect(r.status).not.toBe(0);
      expect(r.stderr).toContain(`apiserver: port ${env.KUBE_API_PORT} (kube-apiserver HTTPS) on 127.0.0.1 is already in use`);
      // Nothing was started: every port is checked before anything starts.
      expect(run('status').stdout).toMatch(/etcd\s+stopped/);
    } finally {
      await new Promise((r) => squatter.close(r));
    }
  });

  it('starts etcd and kube-apiserver, idempotently, with a working admin kubeconfig', () => {
    const first = run('start');
    expect(first.stderr).toBe('');
    expect(first.status).toBe(0);
    expect(first.stdout).toContain('apiserver: healthy after');

    const again = run('start');
    expect(again.status).toBe(0);
    expect(again.stdout).toContain('etcd: already running');
    expect(again.stdout).toContain('apiserver: already running');

    const status = run('status');
    expect(status.status).toBe(0);
    expect(status.stdout).toMatch(/apiserver\s+running\s+pid=\d+ port=\d+ healthy/);

    const exports = Object.fromEntries(
      [...run('env').stdout.matchAll(/^export (\w+)=(.*)$/gm)].map(([, k, v]) => [k, v]),
    );
    expect(exports.KUBECONFIG).toBe(join(state, 'kubeconfig'));
    expect(exports.KUBE_API_URL).toBe(`https://127.0.0.1:${env.KUBE_API_PORT}`);

    const version = JSON.parse(run('kubectl', 'version', '-o', 'json').stdout);
    expect(version.serverVersion.gitVersion).toBe(kubePaths().kubeVersion);
    expect(run('kubectl', 'auth', 'whoami', '-o', 'jsonpath={.status.userInfo.groups}').stdout).toContain('system:masters');
    const config = readFileSync(join(state, 'kubeconfig'), 'utf8');
    expect(config).toContain('certificate-authority-data:');
    expect(config).not.toContain('insecure-skip-tls-verify');
  });

  it('refuses to start on other ports while running; restart keeps the data', () => {
    const moved = spawnSync('bash', [KUBE_SH, 'start'], {
      env: { ...process.env, ...env, KUBE_API_PORT: String(Number(env.KUBE_API_PORT) + 1) },
      encoding: 'utf8',
    });
    expect(moved.status).not.toBe(0);
    expect(moved.stderr).toContain('apiserver: already running');

    expect(run('kubectl', 'create', 'namespace', 'survives-restart').status).toBe(0);
    const restarted = run('restart', 'apiserver');
    expect(restarted.status).toBe(0);
    expect(restarted.stdout).toContain('apiserver: stopped');
    expect(run('kubectl', 'get', 'namespace', 'survives-restart', '-o', 'name').stdout.trim()).toBe('namespace/survives-restart');
  });

  it('stops both', () => {
    const r = run('stop');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('etcd: stopped');
    const status = run('status');
    expect(status.status).toBe(1);
    expect(status.stdout).toMatch(/etcd\s+stopped/);
    expect(status.stdout).toMatch(/apiserver\s+stopped/);
  });
});
