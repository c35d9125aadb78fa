/** `npm run bench -- --agent`: its option, the agent path's stack settings, the launcher's counts and hosts per hour. */
import { describe, expect, it } from 'vitest';
import { parseOptions } from '../../bench/options';
import { agentIronicSettings, agentStackEnv, countLauncherEvents, launcherHosts, staleForAgentPath } from '../../bench/agent-stack';
import { makeHosts, PHASES } from '../../bench/common';
import { hostsPerHour } from '../../bench/report';
import { readIronicLog } from '../../bench/agent-states';

const HELP = new URL('../../bench/run.ts', import.meta.url);
const parse = (...argv: string[]) => parseOptions(argv, HELP);

describe('bench --agent', () => {
  it('is off unless asked, and runs the whole lifecycle with the floor beside it (or the floor alone)', () => {
    expect(parse()).toMatchObject({ agent: false });
    expect(parse('--agent', '--hosts', '20')).toMatchObject({ agent: true, redfish: false, hosts: 20, concurrency: 20, floor: true, driver: 'api' });
    expect(parse('--agent', '--driver', 'floor')).toMatchObject({ agent: true, driver: 'floor', floor: true });
    expect(parse('--agent', '--scale')).toMatchObject({ agent: true, hosts: 1000, concurrency: 200, floor: false });
  });

  it('refuses --redfish beside it, and the drivers that do not take the agent path, naming the options', () => {
    expect(() => parse('--agent', '--redfish')).toThrow(/--agent runs the whole lifecycle .*--redfish is the create -> delete profile.*pick one/);
    for (const argv of [['--driver', 'fleet'], ['--driver', 'k8s'], ['--fleet']]) {
      expect(() => parse('--agent', ...argv)).toThrow('--agent drives the hosts through the per-host API (or --driver floor alone); --driver fleet, --driver k8s and --fleet do not take the agent path yet');
    }
  });

  it('sets the stack up as the agent lab does: virtual media, the launcher notified, Ironic asking each second', () => {
    expect(agentStackEnv({ systemsFile: '/s/systems.json', notifyPort: 21801, httpPort: 21180 })).toEqual({
      SUSHY_SYSTEMS_FILE: '/s/systems.json',
      SUSHY_POWER_DELAY: '0-0.5',
      SUSHY_EXTERNAL_NOTIFICATION_URL: 'http://127.0.0.1:21801/',
      IRONIC_AGENT_PATH: '1',
      IRONIC_HTTP_PORT: '21180',
      IRONIC_AGENT_COMMAND_WAIT_INTERVAL: '1',
      IRONIC_AGENT_POWER_OFF_POLL_INTERVAL: '1',
      IRONIC_MEMO_SESSION_HASH: '1',
      IRONIC_FAST_TRACK: 'false',
    });
    expect(agentStackEnv({ systemsFile: '/s/systems.json', notifyPort: 21801, httpPort: 21180, ironic: { memoSessionHash: false, fastTrack: true } })).toMatchObject({
      IRONIC_MEMO_SESSION_HASH: '0',
      IRONIC_FAST_TRACK: 'true',
    });
  });

  it("remembers the BMC password's hash unless told 0, and keeps fast track off unless told true", () => {
    expect(agentIronicSettings({})).toEqual({ memoSessionHash: true, fastTrack: false });
    expect(agentIronicSettings({ IRONIC_MEMO_SESSION_HASH: '0', IRONIC_FAST_TRACK: 'true' })).toEqual({ memoSessionHash: false, fastTrack: true });
    expect(agentIronicSettings({ IRONIC_MEMO_SESSION_HASH: '1', IRONIC_FAST_TRACK: '1' })).toEqual({ memoSessionHash: true, fastTrack: false });
  });

  it('restarts the services of a kept stack whose config is not the agent path with these settings, and no other', () => {
    const env = agentStackEnv({ systemsFile: '/s/systems.json', notifyPort: 21801, httpPort: 21180 });
    const ironic = (httpPort: number, wait = 1, memo = '1') =>
      `# IRONIC_MEMO_SESSION_HASH=${memo} IRONIC_SQLITE_POOL=\n[deploy]\nhttp_root = /x\nhttp_url = http://127.0.0.1:${httpPort}\nexternal_callback_url = http://127.0.0.1:21385\nfast_track = false\n[agent]\ncommand_wait_interval = ${wait}\npost_deploy_get_power_state_retry_interval = 1\n`;
    const sushy = (url: string, file = '/s/systems.json') => `EXTERNAL_NOTIFICATION_URL = '${url}'\nwith open('${file}') as _f:\n`;
    expect(staleForAgentPath({ ironic: ironic(21180), sushy: sushy('http://127.0.0.1:21801/') }, env)).toEqual([]);
    // The fake-hardware stack: no agent settings, no notifications.
    expect(staleForAgentPath({ ironic: '[deploy]\nhttp_url = http://127.0.0.1:21180\n', sushy: "SUSHY_EMULATOR_FAKE_DRIVER = True\nwith open('/s/systems.json') as _f:\n" }, env)).toEqual(['ironic', 'sushy']);
    // Another offset's ports, Ironic's own command wait, another systems file.
    expect(staleForAgentPath({ ironic: ironic(22680), sushy: sushy('http://127.0.0.1:23301/') }, env)).toEqual(['ironic', 'sushy']);
    expect(staleForAgentPath({ ironic: ironic(21180, 6), sushy: sushy('http://127.0.0.1:21801/', '/s/other.json') }, env)).toEqual(['ironic', 'sushy']);
    // Never started (no config): nothing to restart, the run's start writes it.
    expect(staleForAgentPath({ ironic: '', sushy: '' }, env)).toEqual([]);
    // Fast track asked for, or an Ironic started with another hash setting than asked (stack.sh's header line).
    expect(staleForAgentPath({ ironic: ironic(21180), sushy: sushy('http://127.0.0.1:21801/') }, { ...env, IRONIC_FAST_TRACK: 'true' })).toEqual(['ironic']);
    const started = (memo: string) => ({ ironic: ironic(21180, 1, memo), sushy: sushy('http://127.0.0.1:21801/') });
    expect(staleForAgentPath(started(''), env)).toEqual(['ironic']);
    expect(staleForAgentPath(started('1'), { ...env, IRONIC_MEMO_SESSION_HASH: '0' })).toEqual(['ironic']);
    expect(staleForAgentPath(started('0'), { ...env, IRONIC_MEMO_SESSION_HASH: '0' })).toEqual([]);
  });

  it("names each system's host for the launcher with its boot MAC and one 8 GiB disk, and addresses its BMC by virtual media", () => {
    const systems = [
      { id: 'be4a0000-0000-4000-8000-000000000000', mac: '52:54:02:be:00:00' },
      { id: 'be4a0000-0000-4000-8000-000000000001', mac: '52:54:02:be:00:01' },
    ];
    expect(launcherHosts(systems)).toEqual({
      'be4a0000-0000-4000-8000-000000000000': { name: 'bench-agent-0', mac: '52:54:02:be:00:00', disks: '8G', agentPort: 0, withholdBoots: 0 },
      'be4a0000-0000-4000-8000-000000000001': { name: 'bench-agent-1', mac: '52:54:02:be:00:01', disks: '8G', agentPort: 0, withholdBoots: 0 },
    });
    const hosts = makeHosts(2, { redfishSystems: systems, sushyUrl: 'http://127.0.0.1:21800', bmcScheme: 'redfish-virtualmedia' });
    expect(hosts.map((h) => [h.bmcAddress, h.mac])).toEqual([
      ['redfish-virtualmedia+http://127.0.0.1:21800/redfish/v1/Systems/be4a0000-0000-4000-8000-000000000000', '52:54:02:be:00:00'],
      ['redfish-virtualmedia+http://127.0.0.1:21800/redfish/v1/Systems/be4a0000-0000-4000-8000-000000000001', '52:54:02:be:00:01'],
    ]);
    // --redfish keeps its scheme.
    expect(makeHosts(1, { redfishSystems: systems, sushyUrl: 'http://127.0.0.1:21800' })[0]!.bmcAddress).toMatch(/^redfish\+http:/);
  });

  it("counts the launcher's boots, stops and failed boots, skipping what is not an event", () => {
    const lines = [
      { host: 'bench-agent-0', action: 'started', cmdline: 'ipa-agent-token=<redacted>' },
      { host: 'bench-agent-0', action: 'stopped', reason: 'power Off, boot Cd' },
      { host: 'bench-agent-1', action: 'start-failed', error: 'connection refused' },
      { host: 'bench-agent-1', action: 'boot-failed', error: 'no grub.cfg' },
      { host: 'bench-agent-1', action: 'withheld', boot: 1 },
      { host: 'bench-agent-1', action: 'started' },
    ].map((e) => JSON.stringify(e));
    expect(countLauncherEvents([...lines, '', '{"action": "started"', 'not json'].join('\n'))).toEqual({ started: 2, stopped: 1, failed: 2 });
    expect(countLauncherEvents('')).toEqual({ started: 0, stopped: 0, failed: 0 });
  });
});

describe('bench/agent-states.ts', () => {
  it("reads Ironic's state moves, power changes done and heartbeats skipped on a locked node from its log", () => {
    const node = '01a622a6-cec0-48af-846a-9b649feb444e';
    const log = [
      `2026-12-04 00:55:27.066 13062 INFO ironic.conductor.task_manager [None req-611c - - - - - -] Node ${node} moved to provision state "inspect wait" from state "inspecting"; target provision state is "manageable"`,
      `2026-12-04 00:55:23.238 13062 INFO ironic.conductor.utils [None req-611c - - - - - -] Successfully set node ${node} power state to power on by power on.`,
      `2026-12-04 00:45:46.183 13062 WARNING ironic.drivers.modules.agent_base [None req-1bdd - - - - - -] Node ${node} is currently locked, skipping heartbeat processing (will retry on the next heartbeat): ironic.common.exception.NodeLocked: ...`,
      `2026-12-04 00:55:34.356 13062 INFO ironic.api [None req-9e28 - - - - - -] 127.0.0.1 - POST /v1/continue_inspection - 409 (4242.24ms)`,
      'a line without a time',
    ].join('\n');
    expect(readIronicLog(log)).toEqual({
      moves: [{ node, from: 'inspecting', to: 'inspect wait', at: Date.parse('2026-12-04T00:55:27.066Z') }],
      powerDone: [{ node, at: Date.parse('2026-12-04T00:55:23.238Z') }],
      skipped: [{ node, at: Date.parse('2026-12-04T00:45:46.183Z') }],
    });
  });
});

describe('bench hosts per hour', () => {
  it("is the run's hosts over its whole lifecycle (the sum of its phase times)", () => {
    const cumulativeMs = { available: 60_000, provisioned: 120_000, deprovisioned: 150_000, gone: 180_000 };
    expect(hostsPerHour(100, { cumulativeMs }, PHASES)).toBe(2000);
    // --redfish's lifecycle ends at gone as well; create -> available alone would be another run's.
    expect(hostsPerHour(20, { cumulativeMs }, ['available'])).toBe(1200);
    expect(hostsPerHour(5, { cumulativeMs: { ...cumulativeMs, gone: 0 } }, PHASES)).toBeUndefined();
  });
});
