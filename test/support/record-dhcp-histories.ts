/**
 * Records hosts with spec.dhcp (patch dhcp-reservations) for the replay test,
 * on a real dnsmasq (scripts/dnsmasq.sh in a network namespace) and udhcpc:
 * - `host-dhcp-reservation.json`: a fixed address reserved, the lease taken
 *   and read back by the idle host's lease checks (with power checks between
 *   them), the address changed, then deleted (the reservation released);
 * - `host-dhcp-pool-provision.json`: an address claimed from an IPPool,
 *   provisioned with network data rendered from it, deprovisioned, deleted
 *   (the claim released).
 * With the argument `before`, records instead the shape the code had before
 * the patch: `host-lifecycle-before-dhcp-reservations.json`, a host (no
 * spec.dhcp) with power checks, provisioned, deprovisioned and deleted, on
 * the workflow code of the tree METALFLOW_OLD_TREE names (e.g. `git archive
 * <commit>` unpacked, its node_modules a link to this one's).
 * Never overwrites a fixture.
 * `node --import tsx test/support/record-dhcp-histories.ts [before | -<patch id>]` as root on a running test stack.
 */
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { hostWorkflowId } from '../../types/host-ref';
import type { HostSpec } from '../../types/host';
import { hostViewQuery, type HostView } from '../../workflows/definitions';
import { IpPools } from '../../clients/temporal/ip-pools';
import { FAST_HOST_OPTIONS, randomMac, startHarness, waitFor, type Harness } from './harness';
import { assertNewFixtures, saveHistory } from './record-fixture';
import { askLease, startSite, stopSite, type TestSite } from './dnsmasq-site';

const before = process.argv[2] === 'before';
// `-<patch id>`: the same two hosts on today's code, named for a later patch of their paths (e.g. -idle-by-fire).
const suffix = !before && process.argv[2]?.startsWith('-') ? process.argv[2] : '';
const FILES = before ? ['host-lifecycle-before-dhcp-reservations.json'] : [`host-dhcp-reservation${suffix}.json`, `host-dhcp-pool-provision${suffix}.json`];
assertNewFixtures(...FILES);
const NET = '10.251.9';
const IMAGE = { url: 'http://127.0.0.1/images/demo.qcow2', checksum: 'b'.repeat(64), checksumType: 'sha256' as const, format: 'qcow2' as const };

async function oldBundle(): Promise<string> {
  const tree = process.env.METALFLOW_OLD_TREE;
  if (!tree) throw new Error('METALFLOW_OLD_TREE must name the tree whose workflow code recorded the old shape');
  const { code } = await bundleWorkflowCode({
    workflowsPath: join(tree, 'workflows', 'index.ts'),
    preloadModules: ['bmc', 'failures', 'field-error', 'host-ref', 'host', 'search-attributes', 'validate'].map((m) => join(tree, 'types', `${m}.ts`)),
    workflowInterceptorModules: [join(tree, 'workflows', 'interceptors.ts')],
    logger: new DefaultLogger('WARN'),
  });
  return code;
}

async function enroll(h: Harness, name: string, spec: Omit<HostSpec, 'bmc' | 'online'>) {
  const ref = { namespace: 'replay', name: `${name}-${Date.now()}` };
  await h.hosts.put(ref, {
    spec: { bmc: { address: `fake://${ref.name}`, credentialsName: `${ref.name}-bmc` }, online: true, ...spec },
    credentials: { username: 'admin', password: 'recorded-password' },
  });
  const handle = h.client.workflow.getHandle(hostWorkflowId(ref));
  const view = (): Promise<HostView> => handle.query(hostViewQuery);
  const idle = (state: string) => waitFor(state, async () => ((v) => v.status.provisioning.state === state && !v.currentOperation)(await view()), { timeoutMs: 120_000 });
  return { ref, handle, view, idle };
}

async function provisionAndDelete(h: Harness, host: Awaited<ReturnType<typeof enroll>>): Promise<void> {
  await host.idle('available');
  await h.hosts.setImage(host.ref, IMAGE);
  await host.idle('provisioned');
  await h.hosts.setImage(host.ref, null);
  await host.idle('available');
  await h.hosts.remove(host.ref);
  await host.handle.result();
}

if (before) {
  const h = await startHarness({ hostOptions: { ...FAST_HOST_OPTIONS, powerCheckSeconds: 1 }, workflowCode: await oldBundle() });
  try {
    const host = await enroll(h, 'before-dhcp', { bootMACAddress: randomMac() });
    await host.idle('available');
    const length = (await host.handle.describe()).historyLength;
    await waitFor('a few power checks', async () => (await host.handle.describe()).historyLength >= length + 15);
    await provisionAndDelete(h, host);
    saveHistory(hostWorkflowId(host.ref), FILES[0]!);
  } finally {
    await h.close();
  }
} else {
  const state = await mkdtemp(join(tmpdir(), 'metalflow-record-dhcp-'));
  await chmod(state, 0o755);
  let site: TestSite | undefined;
  let h: Harness | undefined;
  try {
    site = await startSite(state, 'r', NET, 'ignore');
    h = await startHarness({ dhcpSites: { r: site }, hostOptions: { ...FAST_HOST_OPTIONS, powerCheckSeconds: 3, dhcpLeaseCheckSeconds: 1 } });
    const mac = randomMac();
    const fixed = await enroll(h, 'dhcp-fixed', { bootMACAddress: mac, dhcp: { site: 'r', address: `${NET}.11`, tags: ['provisioning'] } });
    await fixed.idle('available');
    await askLease(site, mac);
    await waitFor('the lease read back', async () => (await fixed.view()).status.dhcp?.address === `${NET}.11`);
    const length = (await fixed.handle.describe()).historyLength;
    await waitFor('lease and power checks', async () => (await fixed.handle.describe()).historyLength >= length + 30);
    const spec = (await fixed.view()).spec!;
    await h.hosts.put(fixed.ref, { spec: { ...spec, dhcp: { site: 'r', address: `${NET}.12` } } });
    await waitFor('the new address reserved', async () => (await fixed.view()).status.dhcp?.reservedAddress === `${NET}.12`);
    await h.hosts.remove(fixed.ref);
    await fixed.handle.result();
    saveHistory(hostWorkflowId(fixed.ref), FILES[0]!);

    const pools = new IpPools({ client: h.client, taskQueue: h.taskQueue });
    const pool = { namespace: 'replay', name: `pool-${Date.now()}` };
    await pools.apply(pool, { namePrefix: 'p', pools: [{ start: `${NET}.50`, end: `${NET}.59` }], prefix: 24, gateway: `${NET}.1`, dnsServers: ['10.0.0.53'] });
    const pooled = await enroll(h, 'dhcp-pool', { bootMACAddress: randomMac(), dhcp: { site: 'r', ipPool: { name: pool.name } } });
    await provisionAndDelete(h, pooled);
    saveHistory(hostWorkflowId(pooled.ref), FILES[1]!);
  } finally {
    await h?.close();
    if (site) await stopSite(state, site);
    await rm(state, { recursive: true, force: true });
  }
}
