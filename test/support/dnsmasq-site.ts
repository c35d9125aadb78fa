/**
 * A site's dnsmasq for the DHCP tests, started and stopped by
 * scripts/dnsmasq.sh in network namespaces named for this test process, and
 * busybox udhcpc asking for a lease from the site's client namespace.
 */
import { execFile, execFileSync } from 'node:child_process';
import { chmod, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { DhcpSite } from '../../activities/dhcp/activities';

const run = promisify(execFile);
const SCRIPT = join(import.meta.dirname, '../../scripts/dnsmasq.sh');
export const LEASE_TIME_SECONDS = 3600;

export interface TestSite extends DhcpSite {
  name: string;
  netns: string;
  /** First three octets of the site's /24. */
  net: string;
}

/** Why this machine cannot run the DHCP tests (not root, no `ip netns`, no dnsmasq or busybox), or null. */
export function dhcpUnavailable(): string | null {
  const probe = `mft${process.pid}-probe`;
  try {
    execFileSync('which', ['dnsmasq', 'busybox', 'ip'], { stdio: 'ignore' });
  } catch {
    return 'dnsmasq, busybox or ip not installed (Debian packages dnsmasq-base, busybox, iproute2; scripts/install.sh installs them)';
  }
  try {
    execFileSync('ip', ['netns', 'add', probe], { stdio: 'ignore' });
    execFileSync('ip', ['netns', 'del', probe], { stdio: 'ignore' });
    return null;
  } catch {
    return 'this machine cannot create network namespaces (needs root and CAP_SYS_ADMIN)';
  }
}

function env(site: { name: string; netns: string; net: string }, stateDir: string, unknown: 'ignore' | 'pool'): NodeJS.ProcessEnv {
  return {
    ...process.env,
    METALFLOW_STATE_DIR: stateDir,
    DHCP_SITE: site.name,
    DHCP_NETNS: site.netns,
    DHCP_NET: site.net,
    DHCP_UNKNOWN: unknown,
    DHCP_LEASE_TIME: `${LEASE_TIME_SECONDS}s`,
  };
}

export async function startSite(stateDir: string, name: string, net: string, unknown: 'ignore' | 'pool'): Promise<TestSite> {
  const netns = `mft${process.pid}-${name}`;
  const site = { name, netns, net };
  await run('bash', [SCRIPT, 'start'], { env: env(site, stateDir, unknown) });
  const dir = join(stateDir, 'dnsmasq', name);
  return { ...site, hostsDir: join(dir, 'hosts.d'), leasesFile: join(dir, 'dnsmasq.leases'), leaseTimeSeconds: LEASE_TIME_SECONDS };
}

/** A site in a fresh state folder (0755: dnsmasq, once it drops to its unprivileged user, reads under it), after sweeping stale ones. */
export async function startFreshSite(prefix: string, name: string, net: string, unknown: 'ignore' | 'pool'): Promise<{ state: string; site: TestSite }> {
  await sweepStaleSites();
  const state = await mkdtemp(join(tmpdir(), prefix));
  await chmod(state, 0o755);
  return { state, site: await startSite(state, name, net, unknown) };
}

/**
 * Namespaces (and the dnsmasq in them) left by an earlier test process that
 * was killed before its afterAll: `mft<pid>-*` whose pid is gone. Only those.
 */
export async function sweepStaleSites(): Promise<void> {
  const { stdout } = await run('ip', ['netns', 'list']);
  for (const ns of stdout.split('\n').map((l) => l.split(' ')[0] ?? '')) {
    const owner = /^mft(\d+)-/.exec(ns)?.[1];
    if (!owner || Number(owner) === process.pid || alive(Number(owner))) continue;
    const pids = (await run('ip', ['netns', 'pids', ns])).stdout.split('\n').filter((l) => /^\d+$/.test(l));
    for (const pid of pids) process.kill(Number(pid), 'SIGKILL');
    await run('ip', ['netns', 'del', ns]);
  }
}

/** Whether a process with this pid exists. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Restarts the site's dnsmasq alone: it reads the hosts dir afresh and keeps its leases. */
export async function restartSite(stateDir: string, site: TestSite, unknown: 'ignore' | 'pool'): Promise<void> {
  await run('bash', [SCRIPT, 'restart'], { env: env(site, stateDir, unknown) });
}

/** Stops dnsmasq and deletes both namespaces (their veth pair goes with them). */
export async function stopSite(stateDir: string, site: { name: string; netns: string; net: string }): Promise<void> {
  await run('bash', [SCRIPT, 'stop'], { env: env(site, stateDir, 'ignore') });
}

/**
 * Sets `mac` on the site's client interface and asks for a lease with busybox
 * udhcpc: the address offered and acknowledged, or null when none came after
 * `tries` discovers a second apart. A lease that comes returns at once, so
 * the default is generous (a loaded machine); where none should come, pass
 * NO_LEASE_TRIES to keep the test short.
 */
export const NO_LEASE_TRIES = 2;
export async function askLease(site: TestSite, mac: string, tries = 10): Promise<string | null> {
  const ns = `${site.netns}-c`;
  await run('ip', ['-n', ns, 'link', 'set', 'mfdhcp1', 'address', mac]);
  const { stderr, stdout } = await run(
    'ip',
    ['netns', 'exec', ns, 'busybox', 'udhcpc', '-i', 'mfdhcp1', '-f', '-q', '-n', '-t', String(tries), '-T', '1', '-s', '/bin/true'],
    { timeout: 60_000 },
  ).catch((err: { stdout?: string; stderr?: string }) => ({ stdout: err.stdout ?? '', stderr: err.stderr ?? '' }));
  const m = /lease of (\d+\.\d+\.\d+\.\d+) obtained/.exec(stderr + stdout);
  return m?.[1] ?? null;
}
