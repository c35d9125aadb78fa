/**
 * Records the baseline replay fixtures (test/fixtures/baseline, replayed by
 * test/unit/replay-baseline.test.ts): one history per workflow type and per
 * main path, driven against the real test stack with the current workflow code.
 *
 *   source .wtenv   # in a worktree with its own ports
 *   npm run record:baseline                 # every fixture not recorded yet
 *   npm run record:baseline -- fleet pivot  # only these paths
 *   npm run record:baseline -- --force host-lifecycle   # again, over the existing files
 *
 * A fixture holds the shape of the code of a release: recorded once, when the
 * release is cut; a change to workflow logic after it that makes a fixture
 * fail is a change running hosts would fail on (docs/contributing.md,
 * "Changing workflow code"). So an existing file is only replaced with --force.
 * The whole pivot between two real planes is recorded by test/k8s/pivot.test.ts
 * (METALFLOW_RECORD_PIVOT_FIXTURE=pivot-a-to-b.json).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomUUID } from 'node:crypto';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { REPO_ROOT } from '../../config/env';
import { IronicClient } from '../../clients/ironic/client';
import { IpamError, IpPools } from '../../control/ip-pools';
import { readFirmwareInventory } from '../../control/firmware-inventory';
import type { HostRef, HostSpec } from '../../model/host';
import { hostWorkflowId } from '../../model/host-ref';
import { WORKFLOW_BUNDLE_OPTIONS } from '../../workers/worker';
import { applySpecUpdate, hostViewQuery, powerRequestsUpdate, setUpdatePolicyUpdate, type HostView, type HostWorkflowOptions } from '../../contracts/host';
import { fleetWorkflowId } from '../../contracts/fleet';
import type { fleetWorkflow } from '../../workflows/fleet/fleet';
import type { hostWorkflow } from '../../workflows/host/host';
import { ipPoolWorkflowId } from '../../contracts/ippool';
import { limiterWorkflowId } from '../../contracts/limiter';
import { pivotWorkflowId, planeCheckWorkflowId } from '../../contracts/pivot';
import type { pivotWorkflow } from '../../workflows/pivot/pivot';
import type { planeCheckWorkflow } from '../../workflows/pivot/plane-check';
import { powerSentinelWorkflowId, type PowerSentinelWorkflow } from '../../contracts/power-sentinel';
import type { remediateWorkflow } from '../../workflows/remediation/remediate';
import type { WatchPowerResult } from '../../activities/power/sentinel';
import { remediationWorkflowId, type RemediationInput } from '../../contracts/remediation';
import { serveFiles, tinyIso } from '../../bench/support/bmc-files';
import { IRONIC_URL, SUSHY_URL, TEST_ENV } from './env';
import { FAST_HOST_OPTIONS, randomMac, startHarness, waitFor, type Harness } from './harness';
import { BASELINE_DIR, saveHistory } from './history-fixture';
import { resetRedfishSystem } from './redfish-system';
import { siteTaskQueue } from '../../model/site';
import { createSiteWorker } from '../../workers/site-worker';
import proto from '@temporalio/proto';

const { temporal } = proto;
const DARK_SITE = 'baseline-dark';

const IMAGE = { url: 'http://127.0.0.1/images/baseline.qcow2', checksum: 'f'.repeat(64), checksumType: 'sha256' as const, format: 'qcow2' as const };
const CREDENTIALS = { username: 'admin', password: 'recorded-password' };
const stamp = Date.now();
const ironic = new IronicClient({ url: IRONIC_URL });

const fakeSpec = (name: string, over: Partial<HostSpec> = {}): HostSpec => ({
  bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc` },
  bootMACAddress: randomMac(),
  online: true,
  ...over,
});

const hostHandle = (h: Harness, ref: HostRef) => h.client.workflow.getHandle<typeof hostWorkflow>(hostWorkflowId(ref));

/** Waits until the host is idle and `ok` holds. */
function until(h: Harness, ref: HostRef, what: string, ok: (v: HostView) => boolean, timeoutMs = 180_000): Promise<HostView> {
  return waitFor(what, async () => {
    const v = await hostHandle(h, ref).query(hostViewQuery);
    return !v.currentOperation && ok(v) ? v : undefined;
  }, { timeoutMs });
}
const inState = (state: string) => (v: HostView): boolean => v.status.provisioning.state === state;
const succeeded = (kind: string, count = 1) => (v: HostView): boolean => v.operations.filter((o) => o.kind === kind && o.outcome === 'succeeded').length >= count;

async function removeAndSave(h: Harness, ref: HostRef, file: string): Promise<void> {
  await h.hosts.remove(ref);
  await hostHandle(h, ref).result();
  saveHistory(hostWorkflowId(ref), file);
}

/** A host started straight through the client with its own options (the API's host options are the harness's). */
async function startHost(h: Harness, ref: HostRef, spec: HostSpec, options: Partial<HostWorkflowOptions>): Promise<string> {
  const start = new WithStartWorkflowOperation<typeof hostWorkflow>('hostWorkflow', {
    workflowId: hostWorkflowId(ref),
    taskQueue: h.taskQueue,
    args: [{ ref, options }],
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
  await h.client.workflow.executeUpdateWithStart(applySpecUpdate, { args: [spec], startWorkflowOperation: start });
  return (await hostHandle(h, ref).describe()).runId;
}

/** Schedule-to-start timeouts of the host's calls so far: each is a call its dark site left unstarted. */
async function unstartedCalls(h: Harness, ref: HostRef): Promise<number> {
  const events = (await hostHandle(h, ref).fetchHistory()).events ?? [];
  return events.filter((e) => e.activityTaskTimedOutEventAttributes?.failure?.timeoutFailureInfo?.timeoutType === temporal.api.enums.v1.TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_START).length;
}

interface Path {
  files: string[];
  /** The harness's options, when other than the shared one's. */
  harness?: Parameters<typeof startHarness>[0];
  record(h: Harness): Promise<void>;
}

const PATHS: Record<string, Path> = {
  /** enroll → inspect → prepare → provision → deprovision → delete; the firmware inventory read of its node on the way. */
  'host-lifecycle': {
    files: ['host-lifecycle.json', 'firmware-inventory.json'],
    async record(h) {
      const ref = { namespace: 'baseline', name: `lifecycle-${stamp}` };
      await h.hosts.put(ref, { spec: fakeSpec('baseline'), credentials: CREDENTIALS });
      const available = await until(h, ref, 'available', inState('available'));
      // Ironic's fake driver has no firmware interface: the read fails, a path of its own.
      await readFirmwareInventory(h.client, h.taskQueue, ref, { nodeId: available.status.provisioning.ID }).catch(() => undefined);
      saveHistory(`firmware-inventory/${ref.namespace}/${ref.name}`, 'firmware-inventory.json');
      await h.hosts.setImage(ref, IMAGE);
      await until(h, ref, 'provisioned', inState('provisioned'));
      await h.hosts.setImage(ref, null);
      await until(h, ref, 'available again', (v) => inState('available')(v) && succeeded('deprovision')(v));
      await removeAndSave(h, ref, 'host-lifecycle.json');
    },
  },
  /** Power: a mismatch found by the periodic check and corrected, a keyed reboot sent twice, a power-off hold and its release. */
  'host-power': {
    files: ['host-power.json'],
    harness: { hostOptions: { ...FAST_HOST_OPTIONS, powerCheckSeconds: 1, softPowerOffSeconds: 5 } },
    async record(h) {
      const ref = { namespace: 'baseline', name: `power-${stamp}` };
      await h.hosts.put(ref, { spec: fakeSpec('baseline-power'), credentials: CREDENTIALS });
      const v = await until(h, ref, 'available and on', (x) => inState('available')(x) && x.status.poweredOn);
      await ironic.setPowerState(v.status.provisioning.ID, 'power off');
      await until(h, ref, 'mismatch corrected', (x) => x.power.lastMismatch !== undefined && x.status.poweredOn);
      await h.hosts.reboot(ref, 'soft', 'baseline-reboot');
      await until(h, ref, 'rebooted', succeeded('reboot'));
      await hostHandle(h, ref).executeUpdate(powerRequestsUpdate, { args: [{ reboot: { mode: 'soft', requestId: 'baseline-reboot' } }], updateId: `again-${stamp}` });
      await h.hosts.holdPowerOff(ref, 'baseline', 'hard');
      await until(h, ref, 'held off', (x) => !x.status.poweredOn);
      await h.hosts.releasePowerOff(ref, 'baseline');
      await until(h, ref, 'on again', (x) => x.status.poweredOn);
      await removeAndSave(h, ref, 'host-power.json');
    },
  },
  /** An enroll that keeps failing (no Secret): the backoff hands over to a new run, which waits out the rest first. */
  'host-failure': {
    files: ['host-failure-run1.json', 'host-failure-run2.json'],
    async record(h) {
      const ref = { namespace: 'baseline', name: `failing-${stamp}` };
      const id = hostWorkflowId(ref);
      const runs = [await startHost(h, ref, fakeSpec('baseline-missing'), { errorBackoffSeconds: 1, maxErrorBackoffSeconds: 2, maxHistoryEvents: 20 })];
      await waitFor('two hand-overs', async () => {
        const d = await h.client.workflow.getHandle(id).describe();
        if (!runs.includes(d.runId)) runs.push(d.runId);
        return runs.length >= 3 ? true : undefined;
      }, { timeoutMs: 180_000 });
      await h.client.workflow.getHandle(id).terminate('recorded');
      saveHistory(id, 'host-failure-run1.json', runs[0]);
      saveHistory(id, 'host-failure-run2.json', runs[1]);
    },
  },
  /** A provisioned host deleted: deprovisioned, powered off, its node deleted. */
  'host-delete': {
    files: ['host-delete-provisioned.json'],
    async record(h) {
      const ref = { namespace: 'baseline', name: `delete-${stamp}` };
      await h.hosts.put(ref, { spec: fakeSpec('baseline-delete', { image: IMAGE }), credentials: CREDENTIALS });
      await until(h, ref, 'provisioned', inState('provisioned'));
      await removeAndSave(h, ref, 'host-delete-provisioned.json');
    },
  },
  /** A manual clean whose raid step fails (the fake driver has none), retried, replaced by a corrected request that succeeds. */
  'host-clean': {
    files: ['host-clean.json'],
    async record(h) {
      const ref = { namespace: 'baseline', name: `clean-${stamp}` };
      await h.hosts.put(ref, { spec: fakeSpec('baseline-clean'), credentials: CREDENTIALS });
      await until(h, ref, 'available', inState('available'));
      const bios = { name: 'bios' as const, firmware: { virtualizationEnabled: true } };
      await h.hosts.clean(ref, { steps: [{ name: 'raid', raid: { hardwareRAIDVolumes: [{ level: '1' }] } }, bios] });
      await waitFor('the raid step failed twice', async () => ((await hostHandle(h, ref).query(hostViewQuery)).status.errorCount >= 2 ? true : undefined), { timeoutMs: 180_000 });
      await waitFor('the corrected request accepted', async () => Boolean(await h.hosts.clean(ref, { steps: [bios] })));
      await until(h, ref, 'cleaned', (v) => inState('available')(v) && !v.cleanRequest);
      await removeAndSave(h, ref, 'host-clean.json');
    },
  },
  /** A provisioned host with a HostUpdatePolicy: spec.firmware serviced at a reboot, then a clean request run as a service. */
  'host-service': {
    files: ['host-service.json'],
    async record(h) {
      const ref = { namespace: 'baseline', name: `service-${stamp}` };
      const spec = fakeSpec('baseline-service', { image: IMAGE });
      await h.hosts.put(ref, { spec, credentials: CREDENTIALS });
      await until(h, ref, 'provisioned', inState('provisioned'));
      await h.hosts.put(ref, { spec: { ...spec, firmware: { virtualizationEnabled: true } } });
      await hostHandle(h, ref).executeUpdate(setUpdatePolicyUpdate, { args: [{ firmwareSettings: 'onReboot' }] });
      await h.hosts.reboot(ref);
      await until(h, ref, 'rebooted', succeeded('reboot'));
      await h.hosts.clean(ref, { steps: [{ name: 'bios', settings: { ProcVirtualization: 'Disabled' } }] });
      await until(h, ref, 'serviced twice', succeeded('service', 2));
      await removeAndSave(h, ref, 'host-service.json');
    },
  },
  /** spec.provisioner direct on a sushy-tools Redfish system: enroll, inspect, prepare, provision a live ISO, power off, deprovision, delete. */
  'host-direct': {
    files: ['host-direct.json'],
    async record(h) {
      const address = `redfish-virtualmedia+${SUSHY_URL}/redfish/v1/Systems/6d660000-0000-4000-8000-000000000005`;
      await resetRedfishSystem(address);
      const iso = await serveFiles({ 'live.iso': tinyIso() });
      try {
        const ref = { namespace: 'baseline', name: `direct-${stamp}` };
        const spec: HostSpec = { bmc: { address, credentialsName: 'baseline-direct-bmc' }, online: true, provisioner: 'direct' };
        const ok = (state: string) => (v: HostView) => inState(state)(v) && v.status.operationalStatus === 'OK';
        await h.hosts.put(ref, { spec, credentials: { username: 'admin', password: 'password' } });
        await until(h, ref, 'available', ok('available'));
        await h.hosts.setImage(ref, { url: iso.url('live.iso'), format: 'live-iso' });
        await until(h, ref, 'provisioned', ok('provisioned'));
        await h.hosts.put(ref, { spec: { ...spec, online: false } });
        await until(h, ref, 'available again', (v) => ok('available')(v) && succeeded('deprovision')(v));
        await removeAndSave(h, ref, 'host-direct.json');
      } finally {
        await iso.close();
      }
    },
  },
  /** The power sentinel's run (cancelled), and the watched host told by its signal that its node went off. */
  'power-sentinel': {
    files: ['power-sentinel.json', 'host-power-signal.json'],
    harness: { hostOptions: { ...FAST_HOST_OPTIONS, powerCheckSeconds: 3600, watchedPowerCheckSeconds: 3600 } },
    async record(h) {
      const namespace = `baseline-sentinel-${stamp}`;
      const ref = { namespace, name: 'watched' };
      await h.hosts.put(ref, { spec: fakeSpec('baseline-sentinel', { inspectionMode: 'disabled', automatedCleaningMode: 'disabled' }), credentials: CREDENTIALS });
      const v = await until(h, ref, 'available and on', (x) => inState('available')(x) && x.status.poweredOn);
      const sentinel = await h.client.workflow.start<PowerSentinelWorkflow>('powerSentinelWorkflow', {
        workflowId: powerSentinelWorkflowId(`${h.taskQueue}-baseline`),
        taskQueue: h.taskQueue,
        args: [{ intervalSeconds: 1, watchSeconds: 120, namespace }],
      });
      // Its first list is the baseline: a change is one between two lists.
      await waitFor('the sentinel listed Ironic', async () => {
        const payload = (await sentinel.describe()).raw.pendingActivities?.[0]?.heartbeatDetails?.payloads?.[0];
        return payload && defaultPayloadConverter.fromPayload<WatchPowerResult>(payload).lists >= 1 ? true : undefined;
      });
      await ironic.setPowerState(v.status.provisioning.ID, 'power off');
      await until(h, ref, 'the host told, checked and on again', (x) => x.power.lastMismatch !== undefined && x.status.poweredOn, 60_000);
      await sentinel.cancel();
      await sentinel.result().catch(() => undefined);
      saveHistory(sentinel.workflowId, 'power-sentinel.json');
      await removeAndSave(h, ref, 'host-power-signal.json');
    },
  },
  /** A reboot fleet over three labelled hosts that continues as new with hosts in flight: its first and last runs. */
  fleet: {
    files: ['fleet-reboot-run1.json', 'fleet-reboot-last.json'],
    async record(h) {
      const namespace = `baseline-fleet-${stamp}`;
      const refs = ['a', 'b', 'c'].map((x) => ({ namespace, name: `fleet-${x}` }));
      await Promise.all(refs.map((ref) => h.hosts.put(ref, { metadata: { labels: { rack: 'r1' } }, spec: fakeSpec(`baseline-${ref.name}`), credentials: CREDENTIALS })));
      await Promise.all(refs.map((ref) => until(h, ref, `${ref.name} available and on`, (v) => inState('available')(v) && v.status.poweredOn, 240_000)));
      const fleet = await h.client.workflow.start<typeof fleetWorkflow>('fleetWorkflow', {
        workflowId: fleetWorkflowId(`baseline-reboot-${stamp}`),
        taskQueue: h.taskQueue,
        args: [{ name: `baseline-reboot-${stamp}`, operation: { kind: 'reboot', mode: 'hard' }, selector: { namespace, labelSelector: { matchLabels: { rack: 'r1' } } }, maxConcurrent: 2 }, { options: { maxHistoryEvents: 40 } }],
      });
      const done = await fleet.result();
      if (done.runs < 2) throw new Error(`the fleet did not continue as new (${done.runs} run)`);
      saveHistory(fleet.workflowId, 'fleet-reboot-run1.json', fleet.firstExecutionRunId);
      saveHistory(fleet.workflowId, 'fleet-reboot-last.json');
      await Promise.all(refs.map((ref) => h.hosts.remove(ref)));
    },
  },
  /**
   * A pivot on a worker without a Kubernetes API server (the harness's): it fails selecting, naming
   * the source plane; and the plane check a pivot asks of its target's worker.
   */
  pivot: {
    files: ['pivot-source-refused.json', 'plane-check.json'],
    async record(h) {
      const name = `baseline-pivot-${stamp}`;
      const pivot = await h.client.workflow.start<typeof pivotWorkflow>('pivotWorkflow', {
        workflowId: pivotWorkflowId(name),
        taskQueue: h.taskQueue,
        args: [{ name, source: {}, target: { plane: 'mgmt' }, selector: { namespace: 'baseline' } }],
      });
      await pivot.result().catch(() => undefined);
      saveHistory(pivot.workflowId, 'pivot-source-refused.json');
      const check = await h.client.workflow.start<typeof planeCheckWorkflow>('planeCheckWorkflow', { workflowId: planeCheckWorkflowId(name), taskQueue: h.taskQueue, args: [] });
      await check.result().catch(() => undefined);
      saveHistory(check.workflowId, 'plane-check.json');
    },
  },
  /** An API-mode remediation: the power cycle through a keyed power-off request, the host back on. */
  remediation: {
    files: ['remediation-power-cycle.json'],
    async record(h) {
      const ref = { namespace: `baseline-remed-${stamp}`, name: 'remed-a' };
      await h.hosts.put(ref, { spec: fakeSpec('baseline-remed'), credentials: CREDENTIALS });
      await until(h, ref, 'available and on', (v) => inState('available')(v) && v.status.poweredOn, 240_000);
      const uid = randomUUID();
      const input: RemediationInput = { ref, uid, request: { strategy: { type: 'Reboot' } }, kubernetes: false };
      const handle = await h.client.workflow.start<typeof remediateWorkflow>('remediateWorkflow', { workflowId: remediationWorkflowId(ref, uid), taskQueue: h.taskQueue, args: [input] });
      const view = await handle.result();
      if (view.outcome !== 'succeeded') throw new Error(`the remediation ended ${view.outcome}: ${view.message ?? ''}`);
      saveHistory(handle.workflowId, 'remediation-power-cycle.json');
      await h.hosts.remove(ref);
    },
  },
  /** An IP pool: claims in a batch and one by one, a full pool, a release and reuse, a resize, deleted; and a run handed over with its table. */
  ippool: {
    files: ['ippool-lifecycle.json', 'ippool-continued-run1.json'],
    async record(h) {
      const pools = new IpPools({ client: h.client, taskQueue: h.taskQueue });
      const ref = { namespace: 'baseline', name: `pool-${stamp}` };
      await pools.apply(ref, { namePrefix: 'baseline', pools: [{ start: '10.0.0.10', end: '10.0.0.13' }], preAllocations: { fixed: '10.0.0.13' }, gateway: '10.0.0.1', prefix: 24 });
      await Promise.all(['a', 'b'].map((claim) => pools.allocate(ref, { claim })));
      await pools.allocate(ref, { claim: 'c' });
      await pools.allocate(ref, { claim: 'd' }).catch((err: unknown) => {
        if (!(err instanceof IpamError && err.type === 'PoolExhausted')) throw err;
      });
      await pools.allocate(ref, { claim: 'fixed' });
      await pools.release(ref, 'a');
      await pools.allocate(ref, { claim: 'd' });
      await pools.apply(ref, { namePrefix: 'baseline', pools: [{ start: '10.0.0.10', end: '10.0.0.20' }], preAllocations: { fixed: '10.0.0.13' } });
      for (const claim of ['b', 'c', 'd', 'fixed']) await pools.release(ref, claim);
      await pools.remove(ref);
      await h.client.workflow.getHandle(ipPoolWorkflowId(ref)).result();
      saveHistory(ipPoolWorkflowId(ref), 'ippool-lifecycle.json');

      const small = new IpPools({ client: h.client, taskQueue: h.taskQueue, maxHistoryEvents: 20 });
      const ref2 = { namespace: 'baseline', name: `pool-continued-${stamp}` };
      await small.apply(ref2, { namePrefix: 'baseline', pools: [{ subnet: '10.1.0.0/24' }] });
      const firstRun = (await h.client.workflow.getHandle(ipPoolWorkflowId(ref2)).describe()).runId;
      for (let i = 0; i < 8; i++) await small.allocate(ref2, { claim: `c${i}` });
      saveHistory(ipPoolWorkflowId(ref2), 'ippool-continued-run1.json', firstRun);
      await h.client.workflow.getHandle(ipPoolWorkflowId(ref2)).cancel();
    },
  },
  /** A provisioning limit of 1 and two hosts given an image at once: the one that waited `delayed`, and the limiter's run. */
  limiter: {
    files: ['host-limited.json', 'provisioning-limiter.json'],
    harness: { provisioningLimit: 1 },
    async record(h) {
      const refs = [0, 1].map((i) => ({ namespace: 'baseline', name: `limit-${i}-${stamp}` }));
      await Promise.all(refs.map((ref, i) => h.hosts.put(ref, { spec: fakeSpec(`baseline-limit-${i}`, { image: IMAGE }), credentials: CREDENTIALS })));
      const views = await Promise.all(refs.map((ref) => until(h, ref, 'provisioned', inState('provisioned'))));
      const waited = views.find((v) => v.operations.some((r) => r.delayedSince));
      if (!waited) throw new Error('neither host waited for a permit: nothing to record');
      await Promise.all(refs.map((ref) => h.hosts.remove(ref)));
      await Promise.all(refs.map((ref) => hostHandle(h, ref).result()));
      saveHistory(hostWorkflowId(waited.ref), 'host-limited.json');
      saveHistory(limiterWorkflowId(h.taskQueue), 'provisioning-limiter.json');
    },
  },
  /**
   * A host of a site whose worker is not running: its first call left unstarted past the site watch, the host shown
   * unreachable and the call sent again (v0.1.0 sent it again and again, with a doubling limit); the site's worker
   * started, the host enrolled and inspected there, then deleted.
   */
  'host-site-dark': {
    files: ['host-site-dark.json'],
    harness: { hostOptions: { ...FAST_HOST_OPTIONS, siteWatchSeconds: 1 }, sites: [DARK_SITE] },
    async record(h) {
      const ref = { namespace: 'baseline', name: `site-dark-${stamp}` };
      await h.hosts.put(ref, { spec: fakeSpec('baseline-site-dark', { site: DARK_SITE }), credentials: CREDENTIALS });
      await waitFor('the host shown unreachable', async () => (await hostHandle(h, ref).query(hostViewQuery)).siteUnreachable);
      // Long enough for the calls a dark site is sent while it stays dark (v0.1.0: limits of 1, 2 and 4 s).
      await new Promise((r) => setTimeout(r, 8_000));
      console.log(`schedule-to-start timeouts while dark: ${await unstartedCalls(h, ref)}`);
      const worker = await createSiteWorker({ connection: h.nativeConnection, namespace: 'default', taskQueue: siteTaskQueue(DARK_SITE), ironic: h.ironic, secrets: h.secrets });
      const running = worker.run();
      try {
        await until(h, ref, 'available at its site', inState('available'));
        await removeAndSave(h, ref, 'host-site-dark.json');
      } finally {
        worker.shutdown();
        await running;
      }
    },
  },
};

const args = process.argv.slice(2);
const force = args.includes('--force');
const named = args.filter((a) => a !== '--force');
const unknown = named.filter((n) => !(n in PATHS));
if (unknown.length > 0) throw new Error(`unknown path ${unknown.join(', ')}: one of ${Object.keys(PATHS).join(', ')}`);
const chosen = (named.length > 0 ? named : Object.keys(PATHS)).filter((name) => {
  const taken = PATHS[name]!.files.filter((f) => existsSync(join(BASELINE_DIR, f)));
  if (taken.length === 0 || force) return true;
  console.log(`${name}: ${taken.join(', ')} recorded already (--force records again)`);
  return false;
});

/**
 * Each path in a process of its own: some activity clients are made once per process from the first
 * worker's connection, which the first path's harness closes. The parent bundles the code once.
 */
const BUNDLE_ENV = 'METALFLOW_BASELINE_BUNDLE';
if (process.env[BUNDLE_ENV]) {
  const code = readFileSync(process.env[BUNDLE_ENV], 'utf8');
  for (const name of chosen) {
    const path = PATHS[name]!;
    const h = await startHarness({ ...(path.harness ?? { hostOptions: FAST_HOST_OPTIONS }), workflowCode: code });
    try {
      console.log(`recording ${name}`);
      await path.record(h);
    } finally {
      await h.close();
    }
  }
} else if (chosen.length > 0) {
  execFileSync('bash', [join(REPO_ROOT, 'scripts', 'stack.sh'), 'start'], { env: { ...process.env, ...TEST_ENV }, stdio: 'inherit' });
  const { code } = await bundleWorkflowCode({ ...WORKFLOW_BUNDLE_OPTIONS, logger: new DefaultLogger('WARN') });
  const bundle = join(mkdtempSync(join(tmpdir(), 'metalflow-baseline-')), 'workflow-bundle.js');
  writeFileSync(bundle, code);
  const tsx = join(REPO_ROOT, 'node_modules', '.bin', 'tsx');
  for (const name of chosen) {
    execFileSync(tsx, [fileURLToPath(import.meta.url), ...(force ? ['--force'] : []), name], { env: { ...process.env, [BUNDLE_ENV]: bundle }, stdio: 'inherit' });
  }
}
