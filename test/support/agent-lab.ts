/**
 * The agent path's lab: an Ironic and a sushy-tools of its own (through
 * scripts/stack.sh, state under .state/<name>) set up for Redfish virtual
 * media and the real ironic-python-agent, and scripts/agent/launcher.py,
 * which runs each host's agent (scripts/agent/ipa-host.sh) while sushy says
 * the host is on and booting the virtual CD. Root only: the agent needs
 * network and mount namespaces and loop devices. With `agent: 'fake'` the
 * hosts boot the fake agent (bench/support/fake-agent.ts) instead, in this
 * process: no root, no agent venv.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../../config/env';
import { startFakeAgent, type FakeAgent, type FakeAgentOptions } from '../../bench/support/fake-agent';
import { waitFor } from './harness';
import { stackScript } from './own-ironic';
import { unusedPort } from './ports';

const run = promisify(execFile);

export const AGENT_VENV = process.env.METALFLOW_AGENT_VENV ?? join(REPO_ROOT, '.venv-ipa');

/** Why the agent path cannot run here, or undefined when it can. The fake agent needs none of the real one's. */
export function agentLabUnavailable(agent: 'real' | 'fake' = 'real'): string | undefined {
  const has = (tool: string) => ['/usr/bin', '/usr/sbin', '/bin', '/sbin'].some((d) => existsSync(join(d, tool)));
  // Ironic builds the virtual-media ISO (mkisofs) with an ESP image the stack makes (mkfs.vfat); the fake needs openssl.
  if (agent === 'fake') return ['mkisofs', 'mkfs.vfat', 'openssl'].map((t) => (has(t) ? undefined : `${t} is missing (scripts/apt-packages.txt)`)).find(Boolean);
  if (process.getuid?.() !== 0) return 'the agent path needs root (network and mount namespaces, loop devices)';
  if (!existsSync(join(AGENT_VENV, 'bin', 'ironic-python-agent'))) return `${AGENT_VENV}/bin/ironic-python-agent is missing (scripts/install.sh installs it)`;
  for (const tool of ['socat', 'qemu-img', 'sgdisk', 'losetup', 'unshare', 'mkfs.vfat']) {
    if (!['/usr/bin', '/usr/sbin', '/bin', '/sbin'].some((d) => existsSync(join(d, tool)))) return `${tool} is missing (scripts/apt-packages.txt)`;
  }
  return undefined;
}

export interface LabHost {
  name: string;
  uuid: string;
  mac: string;
  /** Sizes of the host's disks, e.g. ['8G']. */
  disks: string[];
  /** Boots (power on from the virtual CD) without an agent before the agent starts, as a ramdisk that never comes up. */
  withholdBoots?: number;
}

export interface AgentEvent {
  host: string;
  action: 'started' | 'stopped' | 'start-failed' | 'boot-failed' | 'withheld' | 'booted-iso';
  reason?: string;
  /** A booted-iso's volume id (an ISO that is not the agent's: a live ISO). */
  volume?: string;
  error?: string;
  cmdline?: string;
  /** When the launcher wrote it (seconds since the epoch). */
  time?: number;
}

/** A host's system as sushy's notification to the launcher showed it. */
export interface BmcState {
  host: string;
  time: number;
  power: string;
  pendingPower?: string | null;
  bootDevice?: string | null;
  /** The file name of the CD's image (sushy's download of it), or null. */
  cd: string | null;
  cdInserted: boolean;
}

export interface AgentLab {
  ironicUrl: string;
  sushyUrl: string;
  /** The BMC address of a host, as a BareMetalHost names it. */
  bmcAddress(host: LabHost): string;
  /** The files backing a host's disks (they outlive its agent). */
  diskFile(host: LabHost, index?: number): string;
  /** The host's agent's state dir (ipa.log, cmdline). */
  hostDir(host: LabHost): string;
  /**
   * `length` bytes of a host's disk from `offset`, read through the loop
   * device attached to it (what the agent wrote, before the kernel flushed
   * it to the file); undefined while no loop device backs the disk.
   */
  readAttachedDisk(host: LabHost, offset: number, length: number, index?: number): Buffer | undefined;
  /**
   * SIGKILL to the host's agent alone (`ipa-host.sh kill`), as a ramdisk that
   * crashes: the host stays on. Resolves once the agent's process is gone, with
   * its pid and when it was seen gone (ms since the epoch).
   */
  killAgent(host: LabHost): Promise<{ pid: number; goneAt: number }>;
  events(): AgentEvent[];
  /** Every change sushy notified for the host, in order (power, boot device, the CD). */
  bmcStates(host: LabHost): BmcState[];
  /**
   * The provision states Ironic took a node through, in order, from its log
   * (the first is the state it left first): every transition, however short.
   */
  provisionStates(nodeId: string): string[];
  /** The fake agent, when the lab runs one. */
  fakeAgent?: FakeAgent;
  close(): Promise<void>;
}

export interface AgentLabOptions {
  /** 'fake': the hosts boot the fake agent instead of a real one. */
  agent?: 'real' | 'fake';
  fake?: FakeAgentOptions;
  /** Settings of the lab's own stack (scripts/stack.sh), e.g. a shorter IRONIC_CALLBACK_TIMEOUT. */
  stackEnv?: Record<string, string>;
}

/**
 * Starts the lab for `hosts`. `forward` names the loopback ports (besides
 * Ironic's and the boot ISOs') the agents may reach, e.g. an image server.
 */
export async function startAgentLab(name: string, hosts: LabHost[], forward: number[] = [], options: AgentLabOptions = {}): Promise<AgentLab> {
  const state = join(REPO_ROOT, '.state', name);
  const agentState = join(state, 'hosts');
  mkdirSync(state, { recursive: true });
  const [ironicPort, sushyPort, httpPort, notifyPort, temporalPort, temporalUiPort] = await Promise.all(Array.from({ length: 6 }, () => unusedPort()));
  const agentPorts = await Promise.all(hosts.map(() => unusedPort()));
  const systemsFile = join(state, 'systems.json');
  writeFileSync(
    systemsFile,
    JSON.stringify(
      hosts.map((h) => ({
        uuid: h.uuid,
        name: h.name,
        power_state: 'Off',
        external_notifier: true,
        nics: [{ mac: h.mac, ip: '192.0.2.1' }],
        memory_gb: 4,
        processors: { sockets: 1, model: 'metalflow test host', vendor: 'metalflow', cores: 2, threads: 2 },
        disks: h.disks.map((size, i) => ({ id: `Disk${i}`, name: `loop${i}`, capacity_bytes: sizeBytes(size), protocol: 'SATA' })),
      })),
      null,
      2,
    ),
  );
  const hostsFile = join(state, 'hosts.json');
  writeFileSync(hostsFile, JSON.stringify(Object.fromEntries(hosts.map((h, i) => [h.uuid, { name: h.name, mac: h.mac, disks: h.disks.join(','), agentPort: agentPorts[i], withholdBoots: h.withholdBoots ?? 0 }]))));
  const env = {
    ...process.env,
    METALFLOW_STATE_DIR: join(state, 'stack'),
    IRONIC_PORT: String(ironicPort),
    SUSHY_PORT: String(sushyPort),
    TEMPORAL_PORT: String(temporalPort),
    TEMPORAL_UI_PORT: String(temporalUiPort),
    IRONIC_HTTP_PORT: String(httpPort),
    IRONIC_AGENT_PATH: '1',
    SUSHY_EXTERNAL_NOTIFICATION_URL: `http://127.0.0.1:${notifyPort}/`,
    SUSHY_SYSTEMS_FILE: systemsFile,
    SUSHY_POWER_DELAY: '0-0.5',
    METALFLOW_AGENT_STATE: agentState,
    // Ironic asks each second, not every 6 and 5 s, whether an agent command it waits on has finished
    // (install_bootloader) and whether the host went off after the agent's power off: about 9 s of every deploy.
    IRONIC_AGENT_COMMAND_WAIT_INTERVAL: '1',
    IRONIC_AGENT_POWER_OFF_POLL_INTERVAL: '1',
    ...options.stackEnv,
  };
  const stack = stackScript(env);
  const fakeAgent = options.agent === 'fake' ? await startFakeAgent(options.fake) : undefined;
  // Hosts of an earlier run: agents stopped, loop devices detached, disks deleted.
  if (!fakeAgent && existsSync(agentState)) {
    for (const old of readdirSync(agentState)) {
      await run('bash', [join(REPO_ROOT, 'scripts', 'agent', 'ipa-host.sh'), 'destroy', old], { env });
    }
  }
  // A fresh database and fresh BMC state: the nodes and power states of an earlier run are gone.
  rmSync(join(state, 'stack'), { recursive: true, force: true });
  rmSync(join(state, 'launcher'), { recursive: true, force: true });
  await stack('start', 'sushy', 'ironic');
  const launcher: ChildProcess = spawn(
    join(REPO_ROOT, '.venv', 'bin', 'python'),
    [
      join(REPO_ROOT, 'scripts', 'agent', 'launcher.py'),
      '--listen-port', String(notifyPort),
      '--http-port', String(httpPort),
      '--http-root', join(state, 'stack', 'ironic', 'httpboot'),
      '--hosts', hostsFile,
      '--state', join(state, 'launcher'),
      '--sushy-url', `http://127.0.0.1:${sushyPort}`,
      '--forward', [ironicPort, httpPort, ...forward].join(','),
      ...(fakeAgent ? ['--fake-agent', fakeAgent.url] : []),
    ],
    { env, stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const exited = new Promise<void>((resolve) => launcher.once('exit', () => resolve()));
  await waitFor('the agent launcher', async () => {
    if (launcher.exitCode !== null) throw new Error(`agent launcher exited with ${launcher.exitCode}`);
    return (await fetch(`http://127.0.0.1:${httpPort}/`).catch(() => undefined))?.ok;
  });
  const eventsFile = join(state, 'launcher', 'events.jsonl');
  const systemsLog = join(state, 'launcher', 'systems.jsonl');
  const jsonLines = <T>(file: string): T[] => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as T) : []);
  const ironicLog = join(state, 'stack', 'logs', 'ironic.log');
  return {
    ironicUrl: `http://127.0.0.1:${ironicPort}`,
    sushyUrl: `http://127.0.0.1:${sushyPort}`,
    bmcAddress: (h) => `redfish-virtualmedia+http://127.0.0.1:${sushyPort}/redfish/v1/Systems/${h.uuid}`,
    diskFile: (h, index = 0) => join(agentState, h.name, `disk${index}.img`),
    hostDir: (h) => join(agentState, h.name),
    readAttachedDisk: (h, offset, length, index = 0) => readAttachedDisk(join(agentState, h.name), index, offset, length),
    async killAgent(h) {
      const { stdout } = await run('bash', [join(REPO_ROOT, 'scripts', 'agent', 'ipa-host.sh'), 'kill', h.name], { env });
      return { pid: Number(stdout.trim()), goneAt: Date.now() };
    },
    events: () => jsonLines<AgentEvent>(eventsFile),
    bmcStates: (h) => jsonLines<BmcState>(systemsLog).filter((s) => s.host === h.name),
    provisionStates: (nodeId) => provisionStatesFromLog(existsSync(ironicLog) ? readFileSync(ironicLog, 'utf8') : '', nodeId),
    fakeAgent,
    async close() {
      // SIGTERM: the launcher stops every agent it runs (namespaces gone, loop devices detached).
      launcher.kill('SIGTERM');
      await exited;
      if (fakeAgent) await fakeAgent.close();
      else await Promise.all(hosts.map((h) => run('bash', [join(REPO_ROOT, 'scripts', 'agent', 'ipa-host.sh'), 'stop', h.name], { env }).catch(() => undefined)));
      await stack('stop', 'ironic', 'sushy');
    },
  };
}

/**
 * Reads a disk of the host whose state dir is `dir` through its loop device
 * (named in `loops` by the agent's last start), after checking that the loop
 * device is backed by that disk's file: never any other device.
 */
function readAttachedDisk(dir: string, index: number, offset: number, length: number): Buffer | undefined {
  const loops = join(dir, 'loops');
  if (!existsSync(loops)) return undefined;
  const dev = readFileSync(loops, 'utf8').trim().split(',')[index] ?? '';
  if (!/^\/dev\/loop\d+$/.test(dev)) throw new Error(`${loops} names ${dev}, not a loop device`);
  const backing = `/sys/block/${dev.slice('/dev/'.length)}/loop/backing_file`;
  const disk = realpathSync(join(dir, `disk${index}.img`));
  const backedByDisk = () => existsSync(backing) && readFileSync(backing, 'utf8').trim() === disk;
  if (!backedByDisk()) return undefined;
  const fd = openSync(dev, 'r');
  try {
    // Checked again once open (an open device keeps its file): it may have been detached and reused meanwhile.
    if (!backedByDisk()) return undefined;
    const b = Buffer.alloc(length);
    readSync(fd, b, 0, length, offset);
    return b;
  } finally {
    closeSync(fd);
  }
}

/** Ironic's conductor logs every provision state change of a node, each once, as it happens. */
export function provisionStatesFromLog(log: string, nodeId: string): string[] {
  const states: string[] = [];
  const re = new RegExp(`Node ${nodeId} moved to provision state "([^"]+)" from state "([^"]+)"`, 'g');
  for (const m of log.matchAll(re)) {
    if (states.length === 0) states.push(m[2]!);
    states.push(m[1]!);
  }
  return states;
}

function sizeBytes(size: string): number {
  const m = /^(\d+)([MG])$/.exec(size);
  if (!m) throw new Error(`disk size must look like 8G or 512M, got ${size}`);
  return Number(m[1]) * (m[2] === 'G' ? 2 ** 30 : 2 ** 20);
}
