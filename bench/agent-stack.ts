/**
 * What `npm run bench -- --agent` adds to the bench stack so that every host
 * goes through Ironic's agent path (docs/agent-path.md), set up as the agent
 * tests' lab (test/support/agent-lab.ts with `agent: 'fake'`) sets it up:
 *
 * - sushy-tools fake systems, one per host, that tell the agent launcher of
 *   every change (`external_notifier`), each with one 8 GiB disk;
 * - Ironic on the agent path (`IRONIC_AGENT_PATH=1`: Metal3's ironic-image
 *   settings: redfish-virtual-media boot, direct deploy, agent inspection,
 *   metadata erase only, fast track off unless IRONIC_FAST_TRACK=true), asking
 *   each second whether an agent command finished and whether a host went off
 *   after the agent's power off, as the lab's Ironic does (Ironic's 6 s and 5 s
 *   add some 9 s to a deploy), and computing the BMC password's hash once per
 *   BMC as the test stacks' Ironics do (agentIronicSettings says why);
 * - the agent launcher (scripts/agent/launcher.py --fake-agent), which serves
 *   Ironic's http_root and boots a host's agent while its system is on and
 *   booting the virtual CD Ironic inserted;
 * - the fake agent (bench/support/fake-agent.ts), one process serving every
 *   host, booted by the launcher: lookup, heartbeats, inventory, clean and
 *   deploy steps; it writes nothing (no real peer shows 100-1,000 hosts on one
 *   machine: a real agent is a process, namespaces and loop devices per host);
 * - the image the hosts are provisioned with, served on loopback (Ironic reads
 *   its headers before a direct deploy; the fake agent never downloads it).
 *
 * metalflow and the floor both drive these same hosts, one after the other.
 * Everything listens on 127.0.0.1.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { REPO_ROOT } from '../config/env';
import { writeSushySystems, type BenchImage, type SushySystem } from './common';
import { BENCH_PORTS, BENCH_STATE_DIR, IRONIC_URL, readProc, readProcGroup, servicePid, startChild, SUSHY_URL, waitUntil, type Child, type StackService } from './procs';
import type { RunStack } from './run-stack';

/** Each host's one disk, as the launcher hands it to the fake agent (its inventory) and sushy lists it. */
export const AGENT_HOST_DISK = '8G';
const AGENT_HOST_DISK_BYTES = 8 * 2 ** 30;

/**
 * How the fake agent behaves: IPA's pace. Its ramdisk boots in 5 s and its heartbeats are at least 5 s apart
 * (bench/support/fake-agent.ts's defaults), and each asynchronous command takes what the real agent's took on
 * the agent tests' loop devices (its log, ipa.log, of the lifecycle host): the metadata erase 1.3-1.8 s, the
 * qcow2's write 8.5-9.5 s, the boot loader 0.1-0.3 s, the power off 2-6 s; any other 2 s. A step that ends at
 * once (the fake's default) makes the heartbeat IPA sends when a command finishes reach Ironic while the
 * conductor that started the step still holds the node: Ironic answers 202, skips it ("will retry on the next
 * heartbeat"), and the host waits for the next regular heartbeat, 90-180 s later.
 */
export const FAKE_AGENT_SETTINGS = {
  bootMs: 5000,
  stepMs: 2000,
  stepTimes: { erase_devices_metadata: 1500, write_image: 9000, install_bootloader: 200, power_off: 3000 } as Record<string, number>,
  minHeartbeatMs: 5000,
} as const;

/**
 * How the agent path's Ironic runs (from the bench's environment):
 * - memoSessionHash (IRONIC_MEMO_SESSION_HASH, on unless `0`): Ironic's Redfish driver hashes the BMC password
 *   with PBKDF2 (600,000 rounds) for every BMC call to key its session cache, some 0.7 s of CPU each on this
 *   machine, and that was some 85 % of Ironic's CPU on the agent path (bench/results/2026-12-03-agent-path-ironic-cost.md).
 *   On, the hash of the same password and address is computed once (scripts/ironic-site/sitecustomize.py, as
 *   every test Ironic has it): what Ironic sends and keeps is unchanged, and it is the same for metalflow and
 *   the floor. `0` runs Ironic's own code, whose figures are what a Metal3 Ironic of this version spends.
 * - fastTrack (IRONIC_FAST_TRACK, off unless `true`): Ironic's fast track (Metal3's ironic-image has it on by
 *   default): a host whose agent is up and heartbeating is cleaned and deployed without booting it again.
 * Pure.
 */
export function agentIronicSettings(env: Record<string, string | undefined>): { memoSessionHash: boolean; fastTrack: boolean } {
  return { memoSessionHash: env.IRONIC_MEMO_SESSION_HASH !== '0', fastTrack: env.IRONIC_FAST_TRACK === 'true' };
}

/** scripts/stack.sh's settings for the agent path (sushy and Ironic), as the agent tests' lab has them. Pure. */
export function agentStackEnv(p: { systemsFile: string; notifyPort: number; httpPort: number; ironic?: { memoSessionHash: boolean; fastTrack: boolean } }): Record<string, string> {
  const ironic = p.ironic ?? { memoSessionHash: true, fastTrack: false };
  return {
    SUSHY_SYSTEMS_FILE: p.systemsFile,
    SUSHY_POWER_DELAY: '0-0.5',
    SUSHY_EXTERNAL_NOTIFICATION_URL: `http://127.0.0.1:${p.notifyPort}/`,
    IRONIC_AGENT_PATH: '1',
    IRONIC_HTTP_PORT: String(p.httpPort),
    IRONIC_AGENT_COMMAND_WAIT_INTERVAL: '1',
    IRONIC_AGENT_POWER_OFF_POLL_INTERVAL: '1',
    IRONIC_MEMO_SESSION_HASH: ironic.memoSessionHash ? '1' : '0',
    IRONIC_FAST_TRACK: ironic.fastTrack ? 'true' : 'false',
  };
}

/**
 * The bench stack's services whose generated config is not the agent path's with these settings (a stack kept
 * from another run): they are restarted with them. A config that cannot be read is a service not running.
 * Whether Ironic remembers the BMC password hash is the header line stack.sh writes (its process environment
 * cannot be read back: Ironic's process title overwrites it). Pure.
 */
export function staleForAgentPath(conf: { ironic: string; sushy: string }, env: Record<string, string>): StackService[] {
  const stale: StackService[] = [];
  const ironicOk =
    /^external_callback_url = /m.test(conf.ironic) &&
    conf.ironic.includes(`http_url = http://127.0.0.1:${env.IRONIC_HTTP_PORT}\n`) &&
    new RegExp(`^command_wait_interval = ${env.IRONIC_AGENT_COMMAND_WAIT_INTERVAL}$`, 'm').test(conf.ironic) &&
    new RegExp(`^post_deploy_get_power_state_retry_interval = ${env.IRONIC_AGENT_POWER_OFF_POLL_INTERVAL}$`, 'm').test(conf.ironic) &&
    (env.IRONIC_FAST_TRACK === undefined || new RegExp(`^fast_track = ${env.IRONIC_FAST_TRACK}$`, 'm').test(conf.ironic)) &&
    (env.IRONIC_MEMO_SESSION_HASH === undefined || /^# IRONIC_MEMO_SESSION_HASH=1 /m.test(conf.ironic) === (env.IRONIC_MEMO_SESSION_HASH === '1'));
  if (conf.ironic && !ironicOk) stale.push('ironic');
  const sushyOk = conf.sushy.includes(`EXTERNAL_NOTIFICATION_URL = '${env.SUSHY_EXTERNAL_NOTIFICATION_URL}'`) && conf.sushy.includes(`open('${env.SUSHY_SYSTEMS_FILE}')`);
  if (conf.sushy && !sushyOk) stale.push('sushy');
  return stale;
}

/** The launcher's hosts file (scripts/agent/launcher.py --hosts): each system's host name, boot MAC and disk. Pure. */
export function launcherHosts(systems: SushySystem[]): Record<string, { name: string; mac: string; disks: string; agentPort: number; withholdBoots: number }> {
  // agentPort is the real agent's; the fake serves every host on one port of its own.
  return Object.fromEntries(systems.map((s, i) => [s.id, { name: `bench-agent-${i}`, mac: s.mac, disks: AGENT_HOST_DISK, agentPort: 0, withholdBoots: 0 }]));
}

export interface LauncherEventCounts {
  /** Agent boots: the launcher saw a host on and booting the virtual CD, and booted the fake agent. */
  started: number;
  stopped: number;
  /** Boots the launcher could not hand to the agent (start-failed, boot-failed: no kernel command line on the ISO). */
  failed: number;
}

/** Counts of the launcher's events.jsonl lines. Pure. */
export function countLauncherEvents(text: string): LauncherEventCounts {
  const counts: LauncherEventCounts = { started: 0, stopped: 0, failed: 0 };
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    let action: unknown;
    try {
      action = (JSON.parse(line) as { action?: unknown }).action;
    } catch {
      continue;
    }
    if (action === 'started') counts.started++;
    else if (action === 'stopped') counts.stopped++;
    else if (action === 'start-failed' || action === 'boot-failed') counts.failed++;
  }
  return counts;
}

/** What the run's hosts boot from their virtual media and are provisioned with. */
export interface AgentPeers {
  systems: SushySystem[];
  /** scripts/stack.sh settings for sushy and Ironic. */
  env: Record<string, string>;
  /** How Ironic runs (agentIronicSettings). */
  ironic: { memoSessionHash: boolean; fastTrack: boolean };
  image: BenchImage;
  /** CPU seconds of the hosts' side: sushy (the BMCs), and the fake agent with the launcher (the ramdisks). */
  cpuSeconds(): { sushy: number; agent: number };
  /** The launcher's events so far. */
  events(): LauncherEventCounts;
  /** Restarts what a kept stack runs with other settings (after the run's stack start). */
  restartStale(runStack: RunStack, stack: (args: string[], env: Record<string, string>) => string): void;
  stop(): Promise<void>;
}

/** A 64 KiB qcow2 (its magic and version, then filler): what Ironic reads the headers of. */
function imageBytes(): Buffer {
  const b = Buffer.alloc(65_536, 0x5a);
  Buffer.from([0x51, 0x46, 0x49, 0xfb, 0, 0, 0, 3]).copy(b, 0);
  return b;
}

function serveImage(path: string, body: Buffer): Promise<Server> {
  const server = createServer((req, res) => {
    if (req.url !== path) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length });
    res.end(req.method === 'HEAD' ? undefined : body);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

/** Starts the image server, the fake agent and the launcher (before sushy, which notifies the launcher). */
export async function startAgentPeers(p: { hosts: number; runDir: string; runStack: RunStack; log: (msg: string) => void }): Promise<AgentPeers> {
  const systemsFile = join(BENCH_STATE_DIR, `sushy-agent-systems-${p.hosts}.json`);
  const systems = writeSushySystems(systemsFile, p.hosts, { uuidPrefix: 'be4a0000', macPrefix: '52:54:02:be', namePrefix: 'bench-agent', externalNotifier: true, diskBytes: AGENT_HOST_DISK_BYTES });
  const hostsFile = join(p.runDir, 'agent-hosts.json');
  writeFileSync(hostsFile, JSON.stringify(launcherHosts(systems)));
  const ironicSettings = agentIronicSettings(process.env);
  const env = agentStackEnv({ systemsFile, notifyPort: BENCH_PORTS.agentNotify, httpPort: BENCH_PORTS.ironicHttp, ironic: ironicSettings });
  const httpRoot = join(BENCH_STATE_DIR, 'ironic', 'httpboot');
  mkdirSync(httpRoot, { recursive: true });
  const launcherState = join(p.runDir, 'launcher');
  const eventsFile = join(launcherState, 'events.jsonl');

  const body = imageBytes();
  const imagePath = '/bench-agent.qcow2';
  let server: Server | undefined;
  const children: Child[] = [];
  const stop = async (): Promise<void> => {
    // The launcher first: it halts the agents it booted through the fake agent's control port.
    for (const c of [...children].reverse()) await c.stop().catch(() => undefined);
    children.length = 0;
    if (server) await new Promise<void>((resolve) => server!.close(() => resolve()));
    server = undefined;
  };
  try {
    server = await serveImage(imagePath, body);
    const image: BenchImage = {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}${imagePath}`,
      checksum: createHash('sha256').update(body).digest('hex'),
      checksumType: 'sha256',
      format: 'qcow2',
    };
    const s = FAKE_AGENT_SETTINGS;
    const agent = p.runStack.track(
      startChild(
        'fake-agent',
        process.execPath,
        ['--import', 'tsx', join(REPO_ROOT, 'bench', 'support', 'fake-agent.ts'), '--port', String(BENCH_PORTS.fakeAgent), '--boot-ms', String(s.bootMs), '--step-ms', String(s.stepMs), '--step-times', Object.entries(s.stepTimes).map(([k, v]) => `${k}=${v}`).join(','), '--min-heartbeat-ms', String(s.minHeartbeatMs)],
        {},
        join(p.runDir, 'fake-agent.log'),
      ),
    );
    children.push(agent);
    await waitUntil('the fake agent', () => agent.output.some((l) => l.includes('listening on')), 60_000, agent);
    const venv = process.env.METALFLOW_VENV ?? join(REPO_ROOT, '.venv');
    const launcher = p.runStack.track(
      startChild(
        'agent-launcher',
        join(venv, 'bin', 'python'),
        [
          join(REPO_ROOT, 'scripts', 'agent', 'launcher.py'),
          '--listen-port', String(BENCH_PORTS.agentNotify),
          '--http-port', String(BENCH_PORTS.ironicHttp),
          '--http-root', httpRoot,
          '--hosts', hostsFile,
          '--state', launcherState,
          '--sushy-url', SUSHY_URL,
          // The real agent's bridges into its namespace; the fake reaches Ironic on loopback directly.
          '--forward', new URL(IRONIC_URL).port,
          '--fake-agent', `http://127.0.0.1:${BENCH_PORTS.fakeAgent}`,
        ],
        {},
        join(p.runDir, 'agent-launcher.log'),
      ),
    );
    children.push(launcher);
    await waitUntil('the agent launcher', async () => (await fetch(`http://127.0.0.1:${BENCH_PORTS.ironicHttp}/`).catch(() => undefined))?.ok === true, 60_000, launcher);
    p.log(`agent path: fake agent pid ${agent.pid} (boot ${s.bootMs} ms, heartbeats at least ${s.minHeartbeatMs} ms apart), launcher pid ${launcher.pid}, image ${image.url}`);
    p.log(`agent path: Ironic ${ironicSettings.memoSessionHash ? 'remembers the BMC password hash (IRONIC_MEMO_SESSION_HASH=0 for its own code)' : "runs its own code (the BMC password's PBKDF2 on every BMC call)"}, fast track ${ironicSettings.fastTrack ? 'on' : 'off'}`);
    return {
      systems,
      env,
      ironic: ironicSettings,
      image,
      cpuSeconds: () => ({
        sushy: readProcGroup(servicePid('sushy') ?? -1)?.cpuSeconds ?? 0,
        agent: (readProc(agent.pid)?.cpuSeconds ?? 0) + (readProc(launcher.pid)?.cpuSeconds ?? 0),
      }),
      events: () => countLauncherEvents(existsSync(eventsFile) ? readFileSync(eventsFile, 'utf8') : ''),
      restartStale(runStack, stack) {
        const read = (f: string): string => (existsSync(f) ? readFileSync(f, 'utf8') : '');
        const stale = staleForAgentPath({ ironic: read(join(BENCH_STATE_DIR, 'ironic', 'ironic.conf')), sushy: read(join(BENCH_STATE_DIR, 'sushy', 'sushy.conf')) }, env);
        if (stale.length === 0) return;
        p.log(`restarting ${stale.join(' and ')} of the bench stack on the agent path (running with other settings)`);
        for (const svc of stale) runStack.markStarted(svc);
        stack(['restart', ...stale], env);
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
