/**
 * A fake ironic-python-agent for fleet scale: one process serving many hosts,
 * speaking to Ironic what a booted IPA ramdisk speaks (inspection data to the
 * inspection callback, lookup, heartbeats, and the agent API Ironic calls back
 * for commands: clean and deploy steps, their status, partition UUIDs, power
 * off), and writing nothing. A fake because no real peer can show 1,000 hosts
 * on one machine: the real agent is a process, namespaces and loop devices per
 * host (docs/agent-path.md). What it must do the same as the real agent is
 * checked by driving Ironic through one host's lifecycle with both and
 * comparing the provision states (test/agent/fake-agent-states.test.ts).
 *
 * A host "boots" when the agent launcher (scripts/agent/launcher.py
 * --fake-agent) sees Ironic's virtual-media ISO inserted and the system
 * powered on: it posts the kernel command line Ironic put on the ISO to
 * /control/boot, and /control/halt when the host powers off or boots from
 * disk (a plain-HTTP control server). Each host's agent API is under
 * /agents/<name>/ of an HTTPS server: IPA generates a self-signed certificate
 * for its address and sends it with its heartbeats (Ironic refuses a plain
 * HTTP callback URL by default); the fake does the same with one certificate
 * for 127.0.0.1 shared by its hosts.
 *
 * Run alone: node --import tsx bench/support/fake-agent.ts --port P
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** The IPA release the stack's Ironic pairs with (requirements-agent.txt); Ironic reads features off it. */
const AGENT_VERSION = '13.0.0';
/** Ironic API versions IPA sends: the agent token (lookup), and up to agent_verify_ca (heartbeat). */
const LOOKUP_API_VERSION = '1.62';
const HEARTBEAT_API_VERSION = '1.68';
const MANAGER = 'MetalflowFakeHardwareManager';
const MANAGER_VERSIONS = { [MANAGER]: '1.0' };

/** What the launcher tells the fake when a host boots the agent ISO. */
export interface FakeBoot {
  name: string;
  /** The boot MAC (the host's only NIC). */
  mac: string;
  /** Disk sizes in bytes, first is the root disk. */
  disks: number[];
  /** The kernel command line Ironic put on the virtual-media ISO. */
  cmdline: string;
  /** Redfish ComputerSystem.Reset target: the host drops its power there when the agent powers it off. */
  poweroffUrl?: string;
}

export interface FakeAgentOptions {
  /** Loopback port of the control endpoints; 0 (default) picks one. The agents' API gets a port of its own. */
  port?: number;
  /**
   * How long the "ramdisk" boots before the agent first speaks (default 5 s).
   * A real one boots for a minute or more, by which time Ironic waits for it;
   * an agent speaking at once can beat Ironic's own state change (inspection
   * data refused while the node is still "inspecting").
   */
  bootMs?: number;
  /** How long a clean or deploy step stays RUNNING before it succeeds (default 0: done by the next status read). */
  stepMs?: number;
  /**
   * Times of particular asynchronous commands, by clean or deploy step name (`write_image`,
   * `erase_devices_metadata`, ...) or command name (`install_bootloader`, `power_off`, ...); the others take
   * `stepMs`. IPA's steps take their own time: a step that ended at once would make the heartbeat sent when
   * it finished reach Ironic while the conductor that started it still holds the node, which Ironic skips.
   */
  stepTimes?: Record<string, number>;
  /**
   * The least time between two heartbeats of one host, and the longest its
   * heartbeater sleeps: IPA's is 5 s, and a heartbeat after a finished step
   * waits for the next wake-up past it. Lower it to run a fleet faster than
   * real agents would; keep IPA's to compare with them.
   */
  minHeartbeatMs?: number;
  /** Waits between attempts to post the inspection data after a 409, a 5xx or no answer (default IPA's). */
  inspectionRetryWaitsMs?: number[];
  /** Credentials of the BMCs (sushy-tools) for the power-off. */
  bmcUser?: string;
  bmcPassword?: string;
  log?: (line: string) => void;
}

interface Command {
  id: string;
  command_name: string;
  command_status: 'RUNNING' | 'SUCCEEDED' | 'FAILED';
  command_error: unknown;
  command_result: unknown;
}

type Json = Record<string, unknown>;

/** Counts of what the fake did, for the benchmark and the tests. */
export interface FakeAgentCounts {
  boots: number;
  halts: number;
  inspections: number;
  /** Inspection posts retried after a 409, a 5xx or no answer (IPA's retries; a 404's are the fake's own). */
  inspectionRetries: number;
  lookups: number;
  heartbeats: number;
  commands: Record<string, number>;
}

export interface FakeAgent {
  /** Base URL of the control endpoints (/control/boot, /control/halt). */
  url: string;
  /** A host's callback URL (Ironic adds /v1/commands/ and so on). */
  agentUrl(name: string): string;
  /** The agents' TLS certificate (PEM), as their heartbeats send it. */
  certificate: string;
  boot(b: FakeBoot): void;
  halt(name: string): void;
  /** Names of the hosts whose agent is running. */
  running(): string[];
  counts: FakeAgentCounts;
  close(): Promise<void>;
}

/** Parses `key=value` kernel parameters (values without spaces, as Ironic writes them). */
export function kernelParams(cmdline: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const word of cmdline.trim().split(/\s+/)) {
    const eq = word.indexOf('=');
    if (eq > 0) out[word.slice(0, eq)] = word.slice(eq + 1);
  }
  return out;
}

/** The inventory IPA's inspection would report for a host with these NICs and disks. */
export function fakeInventory(b: Pick<FakeBoot, 'name' | 'mac' | 'disks'>): Json {
  return {
    interfaces: [
      { name: 'eth0', mac_address: b.mac, ipv4_address: null, ipv6_address: null, has_carrier: true, lldp: null, vendor: '0x1af4', product: '0x0001', client_id: null, biosdevname: null, speed_mbps: 10000, pci_address: null, driver: 'veth' },
    ],
    cpu: { model_name: 'metalflow fake CPU', frequency: '2400.0000', count: 2, architecture: 'x86_64', flags: ['fpu', 'vmx', 'sse2'], socket_count: 1 },
    disks: b.disks.map((size, i) => ({
      name: `/dev/sd${String.fromCharCode(97 + i)}`,
      model: 'metalflow fake disk',
      size,
      rotational: false,
      wwn: null,
      serial: `disk${i}`,
      vendor: 'metalflow',
      wwn_with_extension: null,
      wwn_vendor_extension: null,
      hctl: `0:0:${i}:0`,
      by_path: `/dev/disk/by-path/fake-${i}`,
      logical_sectors: 512,
      physical_sectors: 512,
    })),
    memory: { total: 4 * 2 ** 30, physical_mb: 4096 },
    bmc_address: '0.0.0.0',
    bmc_v6address: '::/0',
    system_vendor: { product_name: 'metalflow fake host', serial_number: b.name, manufacturer: 'metalflow', firmware: { vendor: 'metalflow', version: '1.0', build_date: '2026-01-01' } },
    boot: { current_boot_mode: 'uefi', pxe_interface: b.mac },
    hostname: b.name,
  };
}

/** IPA's generic clean steps as Ironic sees them (priorities are Ironic's to override). */
const CLEAN_STEPS = [
  { step: 'erase_devices', priority: 10, interface: 'deploy', reboot_requested: false, abortable: true },
  { step: 'erase_devices_metadata', priority: 99, interface: 'deploy', reboot_requested: false, abortable: true },
  { step: 'erase_devices_express', priority: 0, interface: 'deploy', reboot_requested: false, abortable: true },
  { step: 'delete_configuration', priority: 0, interface: 'raid', reboot_requested: false, abortable: true },
  { step: 'create_configuration', priority: 0, interface: 'raid', reboot_requested: false, abortable: true },
];
const DEPLOY_STEPS = [
  { step: 'erase_devices_metadata', priority: 0, interface: 'deploy', reboot_requested: false },
  { step: 'apply_configuration', priority: 0, interface: 'raid', reboot_requested: false, argsinfo: { raid_config: { description: 'The RAID configuration to apply.', required: true } } },
  { step: 'write_image', priority: 0, interface: 'deploy', reboot_requested: false },
];

/**
 * IPA's waits between its five attempts to post the inspection data (tenacity's wait_exponential, multiplier 1.5,
 * min 5 s, max 30 s, in ironic_python_agent/inspector.py of the agent venv).
 */
export const IPA_INSPECTION_RETRY_WAITS_MS = [5000, 5000, 6000, 12_000];

/** IPA's heartbeater sleeps 0.1 s after each wake-up (IronicPythonAgentHeartbeater.run). */
const HEARTBEATER_PAUSE_MS = 100;

/**
 * How long IPA's heartbeater waits before it next looks (IronicPythonAgentHeartbeater._run_next in the agent venv):
 * what is left of its interval, at most its least interval (5 s). With an interval of 90-180 s it so wakes every
 * 5.1 s, and a heartbeat a finished command forced goes out at the next of those wake-ups, 0-5 s after the command
 * ended, not at once: a fake that sent it at once met a conductor still holding the node more often than IPA does.
 */
export function heartbeaterWaitMs(now: number, lastHeartbeat: number, intervalMs: number, minHeartbeatMs: number): number {
  return Math.min(minHeartbeatMs, Math.max(0, intervalMs - (now - lastHeartbeat)));
}

/** Whether IPA's heartbeater heartbeats at a wake-up (_heartbeat_expected): its interval passed, or forced and its least interval passed. */
export function heartbeatExpected(now: number, lastHeartbeat: number, intervalMs: number, forced: boolean, minHeartbeatMs: number): boolean {
  const elapsed = now - lastHeartbeat;
  return elapsed >= intervalMs || (forced && elapsed > minHeartbeatMs);
}

const jitter = (ms: number, lo: number, hi: number) => ms * (lo + Math.random() * (hi - lo));

class FakeHost {
  readonly commands: Command[] = [];
  private stopped = false;
  /** Ends the run loop's current sleep early (a stop). */
  private wake?: () => void;
  private uuid?: string;
  private token?: string;
  private heartbeatTimeoutMs = 300_000;
  private lastHeartbeat = 0;
  private intervalMs = 0;
  /** A finished command asked for a heartbeat (IPA's heartbeat_forced): sent at the heartbeater's next wake-up. */
  private forced = false;
  private readonly params: Record<string, string>;

  constructor(
    readonly boot: FakeBoot,
    private readonly callbackUrl: string,
    private readonly certificate: string,
    private readonly opts: Required<Pick<FakeAgentOptions, 'bootMs' | 'stepMs' | 'stepTimes' | 'minHeartbeatMs' | 'inspectionRetryWaitsMs' | 'bmcUser' | 'bmcPassword'>> & { log: (l: string) => void },
    private readonly counts: FakeAgentCounts,
    private readonly onPoweredOff: () => void,
  ) {
    this.params = kernelParams(boot.cmdline);
    // With virtual media the token travels on the kernel command line; without it the lookup hands one out.
    this.token = this.params['ipa-agent-token'];
  }

  get apiUrl(): string | undefined {
    return this.params['ipa-api-url']?.replace(/\/+$/, '');
  }

  tokenOk(token: string | null): boolean {
    return this.token !== undefined && token === this.token;
  }

  start(): void {
    void this.run().catch((err) => this.opts.log(`${this.boot.name}: agent stopped: ${String(err)}`));
  }

  stop(): void {
    this.stopped = true;
    this.wake?.();
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(t);
        this.wake = undefined;
        resolve();
      };
      const t = setTimeout(done, ms);
      this.wake = done;
    });
  }

  private async run(): Promise<void> {
    await this.sleep(this.opts.bootMs);
    if (this.stopped) return;
    const inspectionUrl = this.params['ipa-inspection-callback-url'];
    if (inspectionUrl) await this.inspect(inspectionUrl);
    if (this.stopped || !this.apiUrl) return;
    await this.lookup();
    while (!this.stopped) {
      await this.sleep(heartbeaterWaitMs(Date.now(), this.lastHeartbeat, this.intervalMs, this.opts.minHeartbeatMs));
      if (this.stopped) return;
      if (heartbeatExpected(Date.now(), this.lastHeartbeat, this.intervalMs, this.forced, this.opts.minHeartbeatMs)) await this.heartbeat();
      await this.sleep(HEARTBEATER_PAUSE_MS);
    }
  }

  /**
   * Posts the inventory as IPA's inspection does (ironic_python_agent/inspector.py, call_inspector): a 409 (the
   * node locked: the conductor that moved it to "inspect wait" still holds it, or another task does), a 5xx or a
   * connection error is retried on IPA's schedule (`inspectionRetryWaitsMs`: five attempts); any other refusal, or
   * the last attempt's, is logged and the lookup goes on, as IPA's does. Unlike IPA it also retries a 404 until the
   * host is halted: Ironic has not reached "inspect wait" yet when a ramdisk that boots in seconds speaks (a real one
   * boots for a minute or more), and under load its task from the power on to "inspect wait" took over a minute at
   * 100 hosts; a host that never gets there is powered off by Ironic's inspection timeout, which halts it.
   */
  private async inspect(url: string): Promise<void> {
    const waits = this.opts.inspectionRetryWaitsMs;
    let retried = 0;
    let notFound = 0;
    let last = 'no answer';
    while (!this.stopped) {
      let wait: number;
      try {
        const res = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json' },
          body: JSON.stringify({ inventory: fakeInventory(this.boot), root_disk: fakeInventory(this.boot).disks, boot_interface: this.boot.mac, configuration: { collectors: ['default'], managers: [{ name: MANAGER, version: '1.0' }] }, error: null }),
        });
        const body = (await res.json().catch(() => ({}))) as Json;
        if (res.status < 300) {
          this.counts.inspections++;
          const uuid = (body.uuid as string | undefined) ?? ((body.node as Json | undefined)?.uuid as string | undefined);
          if (uuid) this.uuid = uuid;
          return;
        }
        last = String(res.status);
        if (res.status === 404) {
          wait = Math.min(1000 * 1.5 ** notFound++, 10_000);
        } else if (res.status === 409 || res.status >= 500) {
          if (retried >= waits.length) break;
          this.counts.inspectionRetries++;
          wait = waits[retried++]!;
          this.opts.log(`${this.boot.name}: inspection data answered ${res.status}, posting again in ${wait} ms`);
        } else {
          this.opts.log(`${this.boot.name}: inspection data refused: ${res.status}`);
          return;
        }
      } catch (err) {
        // Ironic not reachable: retried on the same schedule, as IPA retries connection errors.
        last = String(err);
        if (retried >= waits.length) break;
        wait = waits[retried++]!;
      }
      await this.sleep(wait);
    }
    if (!this.stopped) this.opts.log(`${this.boot.name}: inspection data not taken (last: ${last})`);
  }

  private async lookup(): Promise<void> {
    while (!this.stopped) {
      const q = new URLSearchParams({ addresses: this.boot.mac });
      if (this.uuid) q.set('node_uuid', this.uuid);
      try {
        const res = await fetch(`${this.apiUrl}/v1/lookup?${q}`, { headers: { accept: 'application/json', 'X-OpenStack-Ironic-API-Version': LOOKUP_API_VERSION } });
        if (res.ok) {
          const body = (await res.json()) as { node?: Json; config?: Json };
          const uuid = body.node?.uuid;
          if (typeof uuid === 'string') {
            this.counts.lookups++;
            this.uuid = uuid;
            const timeout = Number(body.config?.heartbeat_timeout);
            if (Number.isFinite(timeout) && timeout > 0) this.heartbeatTimeoutMs = timeout * 1000;
            const token = body.config?.agent_token;
            if (typeof token === 'string' && token.length >= 32 && !this.token) this.token = token;
            return;
          }
        }
      } catch {
        // Connection refused or reset: retried, as IPA does until its lookup timeout.
      }
      await this.sleep(1000);
    }
  }

  private async heartbeat(): Promise<void> {
    try {
      const res = await fetch(`${this.apiUrl}/v1/heartbeat/${this.uuid}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', 'X-OpenStack-Ironic-API-Version': HEARTBEAT_API_VERSION },
        body: JSON.stringify({ callback_url: this.callbackUrl, agent_token: this.token, agent_version: AGENT_VERSION, agent_verify_ca: this.certificate }),
      });
      await res.arrayBuffer();
      if (res.status !== 202) throw new Error(`heartbeat: ${res.status}`);
      this.counts.heartbeats++;
      this.forced = false;
      this.intervalMs = jitter(this.heartbeatTimeoutMs, 0.3, 0.6);
    } catch {
      this.intervalMs = jitter(this.opts.minHeartbeatMs, 1, 2);
    }
    this.lastHeartbeat = Date.now();
  }

  /**
   * IPA heartbeats again after a command finishes, at its heartbeater's next wake-up (heartbeaterWaitMs) and no
   * sooner than its least interval after the last heartbeat: the command only raises a flag.
   */
  private forceHeartbeat(): void {
    this.forced = true;
  }

  /** Runs an agent command as IPA would answer it; undefined when the command is unknown. */
  execute(name: string, params: Json): { status: number; body: unknown } {
    const running = this.commands.find((c) => c.command_status === 'RUNNING');
    if (running) return { status: 409, body: { faultcode: 'Client', faultstring: `Agent is busy executing ${running.command_name}` } };
    const [ext, cmd] = name.split('.', 2) as [string, string | undefined];
    this.counts.commands[name] = (this.counts.commands[name] ?? 0) + 1;
    const sync = (result: unknown): Command => this.record(cmd ?? name, 'SUCCEEDED', result);
    const node = (params.node ?? {}) as Json;
    switch (name) {
      case 'clean.get_clean_steps':
        return ok(sync({ clean_steps: { [MANAGER]: CLEAN_STEPS }, hardware_manager_version: MANAGER_VERSIONS }));
      case 'deploy.get_deploy_steps':
        return ok(sync({ deploy_steps: { [MANAGER]: DEPLOY_STEPS }, hardware_manager_version: MANAGER_VERSIONS }));
      case 'service.get_service_steps':
        return ok(sync({ service_steps: { [MANAGER]: [] }, hardware_manager_version: MANAGER_VERSIONS }));
      case 'clean.execute_clean_step':
      case 'deploy.execute_deploy_step':
      case 'service.execute_service_step': {
        const kind = ext as 'clean' | 'deploy' | 'service';
        const step = (params.step ?? {}) as Json;
        // Ironic keeps what create_configuration returns as the node's RAID config; the real agent returns what it built.
        const result = step.step === 'create_configuration' || step.step === 'apply_configuration' ? (node.target_raid_config ?? {}) : null;
        return ok(this.async(cmd!, { [`${kind}_result`]: result, [`${kind}_step`]: step }, undefined, typeof step.step === 'string' ? step.step : undefined));
      }
      case 'standby.get_partition_uuids':
        return ok(sync({}));
      case 'standby.sync':
        return ok(sync(null));
      case 'standby.power_off':
      case 'standby.run_image':
        return ok(this.async(cmd!, null, () => void this.powerOff()));
      case 'image.install_bootloader':
        return ok(this.async(cmd!, null));
      case 'log.collect_system_logs':
        // An empty gzip'd tar: the logs of a ramdisk that wrote nothing.
        return ok(sync({ system_logs: 'H4sIAAAAAAAAA+3BAQ0AAADCoPdPbQ8HFAAAAAAAAAAAAAAAAAAAAIA3A5ihNggAKAAA' }));
      case 'system.lockdown':
        return ok(this.async(cmd!, null));
      default:
        this.counts.commands[name]--;
        return { status: 404, body: { faultcode: 'Client', faultstring: `Unknown command: ${name}` } };
    }
  }

  private record(name: string, status: Command['command_status'], result: unknown): Command {
    const c: Command = { id: randomUUID(), command_name: name, command_status: status, command_error: null, command_result: result };
    this.commands.push(c);
    return c;
  }

  private async(name: string, result: unknown, after?: () => void, step?: string): Command {
    const c = this.record(name, 'RUNNING', null);
    const finish = () => {
      if (this.stopped) return;
      c.command_status = 'SUCCEEDED';
      c.command_result = result;
      after?.();
      this.forceHeartbeat();
    };
    setTimeout(finish, (step === undefined ? undefined : this.opts.stepTimes[step]) ?? this.opts.stepTimes[name] ?? this.opts.stepMs);
    return { ...c };
  }

  /** The host drops its power at the BMC, as the real one does after IPA's poweroff. */
  private async powerOff(): Promise<void> {
    this.stop();
    if (this.boot.poweroffUrl) {
      const auth = Buffer.from(`${this.opts.bmcUser}:${this.opts.bmcPassword}`).toString('base64');
      const res = await fetch(this.boot.poweroffUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Basic ${auth}` },
        body: JSON.stringify({ ResetType: 'ForceOff' }),
      }).catch((err: unknown) => err);
      if (!(res instanceof Response) || !res.ok) this.opts.log(`${this.boot.name}: power off at the BMC failed: ${res instanceof Response ? res.status : String(res)}`);
    }
    this.onPoweredOff();
  }
}

const ok = (c: Command) => ({ status: 200, body: c });

export async function startFakeAgent(options: FakeAgentOptions = {}): Promise<FakeAgent> {
  const opts = {
    bootMs: options.bootMs ?? 5000,
    stepMs: options.stepMs ?? 0,
    stepTimes: options.stepTimes ?? {},
    minHeartbeatMs: options.minHeartbeatMs ?? 5000,
    inspectionRetryWaitsMs: options.inspectionRetryWaitsMs ?? IPA_INSPECTION_RETRY_WAITS_MS,
    bmcUser: options.bmcUser ?? process.env.SUSHY_USERNAME ?? 'admin',
    bmcPassword: options.bmcPassword ?? process.env.SUSHY_PASSWORD ?? 'password',
    log: options.log ?? ((l: string) => console.error(`[fake-agent] ${l}`)),
  };
  const hosts = new Map<string, FakeHost>();
  const counts: FakeAgentCounts = { boots: 0, halts: 0, inspections: 0, inspectionRetries: 0, lookups: 0, heartbeats: 0, commands: {} };
  let agentBase = '';
  const tls = selfSignedCertificate();

  const halt = (name: string) => {
    const h = hosts.get(name);
    if (!h) return;
    h.stop();
    hosts.delete(name);
    counts.halts++;
  };
  const boot = (b: FakeBoot) => {
    if (!/^[a-z0-9][a-z0-9-]{0,62}$/.test(b.name)) throw new Error(`host name must be lower-case letters, digits and '-': ${b.name}`);
    // A boot while running is a reboot: the old agent (and its command list) is gone.
    if (hosts.has(b.name)) halt(b.name);
    const h = new FakeHost(b, `${agentBase}/agents/${b.name}`, tls.cert, opts, counts, () => {
      if (hosts.get(b.name) === h) halt(b.name);
    });
    hosts.set(b.name, h);
    counts.boots++;
    h.start();
  };

  const serve = (handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>) => (req: IncomingMessage, res: ServerResponse) => {
    void handle(req, res).catch((err: unknown) => send(res, 500, { faultcode: 'Server', faultstring: String(err) }));
  };
  const control: Server = createServer(serve(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    const body = req.method === 'POST' ? await readJson(req) : {};
    if (url.pathname === '/control/boot' && req.method === 'POST') {
      boot(body as unknown as FakeBoot);
      return send(res, 204);
    }
    if (url.pathname === '/control/halt' && req.method === 'POST') {
      halt(String(body.name));
      return send(res, 204);
    }
    return send(res, 404, { faultcode: 'Client', faultstring: 'Not found' });
  }));
  const agents = createTlsServer({ key: tls.key, cert: tls.cert }, serve(async (req, res) => {
    const url = new URL(req.url ?? '/', 'https://fake');
    const body = req.method === 'POST' ? await readJson(req) : {};
    const m = /^\/agents\/([a-z0-9-]+)(\/v1)?(\/.*)?$/.exec(url.pathname);
    const host = m ? hosts.get(m[1]!) : undefined;
    if (!m) return send(res, 404, { faultcode: 'Client', faultstring: 'Not found' });
    // A host that is off does not answer: the connection drops as a powered-off machine's would.
    if (!host) return void req.socket.destroy();
    const path = m[3] ?? '/';
    if (path === '/status' && req.method === 'GET') return send(res, 200, { started_at: 0, version: AGENT_VERSION });
    if (!path.startsWith('/commands')) return send(res, 404, { faultcode: 'Client', faultstring: 'Not found' });
    if (!host.tokenOk(url.searchParams.get('agent_token'))) return send(res, 401, { faultcode: 'Client', faultstring: 'Token invalid.' });
    if (req.method === 'GET' && (path === '/commands' || path === '/commands/')) return send(res, 200, { commands: host.commands });
    if (req.method === 'GET') {
      const c = host.commands.find((x) => x.id === path.split('/')[2]);
      return c ? send(res, 200, c) : send(res, 404, { faultcode: 'Client', faultstring: 'Command Result not found' });
    }
    if (req.method === 'POST' && (path === '/commands' || path === '/commands/')) {
      if (typeof body.name !== 'string' || !body.params || typeof body.params !== 'object') return send(res, 400, { faultcode: 'Client', faultstring: 'Missing or invalid name or params' });
      const r = host.execute(body.name, body.params as Json);
      return send(res, r.status, r.body);
    }
    return send(res, 405, { faultcode: 'Client', faultstring: 'Method not allowed' });
  }));

  await new Promise<void>((resolve) => control.listen(options.port ?? 0, '127.0.0.1', resolve));
  await new Promise<void>((resolve) => agents.listen(0, '127.0.0.1', resolve));
  agentBase = `https://127.0.0.1:${(agents.address() as AddressInfo).port}`;
  return {
    url: `http://127.0.0.1:${(control.address() as AddressInfo).port}`,
    agentUrl: (name) => `${agentBase}/agents/${name}`,
    certificate: tls.cert,
    boot,
    halt,
    running: () => [...hosts.keys()],
    counts,
    async close() {
      for (const name of [...hosts.keys()]) halt(name);
      for (const server of [control, agents]) {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    },
  };
}

/** A self-signed certificate for 127.0.0.1, as IPA makes for its advertised address (openssl CLI). */
function selfSignedCertificate(): { key: string; cert: string } {
  const dir = mkdtempSync(join(tmpdir(), 'mf-fake-agent-'));
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '30', '-subj', '/CN=metalflow-fake-agent', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', 'agent.key', '-out', 'agent.crt'], { cwd: dir, stdio: 'pipe' });
    return { key: readFileSync(join(dir, 'agent.key'), 'utf8'), cert: readFileSync(join(dir, 'agent.crt'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function send(res: ServerResponse, status: number, body?: unknown): void {
  if (body === undefined) return void res.writeHead(status).end();
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
}

async function readJson(req: IncomingMessage): Promise<Json> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  try {
    const v: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
    return v && typeof v === 'object' ? (v as Json) : {};
  } catch {
    return {};
  }
}

/** `--step-times write_image=9000,power_off=3000`: milliseconds by step or command name. */
export function parseStepTimes(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const item of text.split(',').filter(Boolean)) {
    const m = /^([a-z_]+)=(\d+)$/.exec(item.trim());
    if (!m) throw new Error(`--step-times: NAME=MS items separated by commas, got ${JSON.stringify(item)}`);
    out[m[1]!] = Number(m[2]);
  }
  return out;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const arg = (flag: string) => {
    const i = process.argv.indexOf(flag);
    return i > 0 ? process.argv[i + 1] : undefined;
  };
  const agent = await startFakeAgent({
    port: Number(arg('--port') ?? 0),
    bootMs: Number(arg('--boot-ms') ?? 5000),
    stepMs: Number(arg('--step-ms') ?? 0),
    stepTimes: parseStepTimes(arg('--step-times') ?? ''),
    minHeartbeatMs: Number(arg('--min-heartbeat-ms') ?? 5000),
  });
  console.log(`[fake-agent] listening on ${agent.url}`);
  process.on('SIGTERM', () => void agent.close().then(() => process.exit(0)));
}
