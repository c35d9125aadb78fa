/**
 * The direct provisioner with its worker killed (SIGKILL) while the BMC's
 * power-on request of a live-ISO provisioning is in flight: a new worker
 * finishes, the ISO was inserted once, and each power request reached the
 * BMC once (no second power cycle, no second power-on). The BMC is
 * sushy-tools (system mf-bm-06 of the test stack) behind a counting proxy
 * that holds the power-on request.
 */
import { operationEvents } from '../support/operation-history';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Connection } from '@temporalio/client';
import type { HostService } from '../../api/host-service';
import { openBmc } from '../../clients/bmc/bmc-client';
import { parseBmcAddress } from '../../model/bmc';
import type { HostSpec } from '../../model/host';
import { IRONIC_URL, SUSHY_URL, TEMPORAL_ADDRESS } from '../support/env';
import { IronicProxy, type RecordedRequest } from '../../bench/support/ironic-proxy';
import { uniq, waitFor } from '../support/harness';
import { WorkerProcesses } from '../support/worker-process';
import { serveFiles, tinyIso, type FileServer } from '../../bench/support/bmc-files';

const SYSTEM = '/redfish/v1/Systems/6d660000-0000-4000-8000-000000000006';
let bmcProxy: IronicProxy; // generic HTTP proxy: here in front of the Redfish BMC
let iso: FileServer;
let connection: Connection;
let hosts: HostService;
const workers = new WorkerProcesses('direct-crash', () => IRONIC_URL);

const isReset = (r: RecordedRequest) => r.method === 'POST' && r.path.endsWith('/Actions/ComputerSystem.Reset');
const resetType = (r: RecordedRequest) => (JSON.parse(r.body) as { ResetType: string }).ResetType;
const isPowerOn = (r: RecordedRequest) => isReset(r) && resetType(r) === 'On';
const isInsert = (r: RecordedRequest) => r.method === 'POST' && r.path.endsWith('VirtualMedia.InsertMedia');

beforeAll(async () => {
  bmcProxy = new IronicProxy(SUSHY_URL);
  await bmcProxy.start();
  iso = await serveFiles({ 'crash.iso': tinyIso() });
  connection = await Connection.connect({ address: TEMPORAL_ADDRESS });
  hosts = workers.hostService(connection);
  // Start off and empty, whatever an earlier run left.
  const parsed = parseBmcAddress(`redfish+${SUSHY_URL}${SYSTEM}`);
  if (!parsed.ok) throw new Error('bad test address');
  const bmc = await openBmc(parsed.value, { username: 'admin', password: 'password' });
  try {
    await bmc.ejectMedia!();
    await bmc.setPower('off', { timeoutMs: 30_000, pollIntervalMs: 200 });
  } finally {
    await bmc.close();
  }
});

afterAll(async () => {
  workers.killAll();
  await bmcProxy?.stop();
  await iso?.close();
  await connection?.close();
});

describe('direct provisioner, worker killed mid-provisioning', () => {
  it('finishes on a new worker with one ISO insert and no second power cycle', async () => {
    const ref = { namespace: 'direct-crash', name: uniq('host') };
    const spec: HostSpec = {
      bmc: { address: `redfish-virtualmedia+${bmcProxy.url}${SYSTEM}`, credentialsName: `${ref.name}-bmc` },
      online: true,
      provisioner: 'direct',
    };
    const first = workers.start();
    await hosts.put(ref, { spec, credentials: { username: 'admin', password: 'password' } });
    await waitFor('available and on', async () => {
      const v = await hosts.get(ref);
      return v.status.provisioning.state === 'available' && v.status.poweredOn && !v.currentOperation;
    }, { timeoutMs: 90_000 });
    const resetsBefore = bmcProxy.requests.filter(isReset).length;

    // Provisioning a running host: power off, insert, boot once from CD, power on (held, then the worker dies).
    bmcProxy.hold(isPowerOn, 3000);
    const url = iso.url('crash.iso');
    await hosts.put(ref, { spec: { ...spec, image: { url, format: 'live-iso' } } });
    await waitFor('the power-on request to be in flight', async () =>
      bmcProxy.requests.filter(isReset).slice(resetsBefore).some(isPowerOn), { timeoutMs: 90_000 });
    first.kill('SIGKILL');
    await waitFor('the first worker to die', async () => first.signalCode === 'SIGKILL');

    workers.start();
    await workers.expireLost(connection, first);
    const done = await waitFor('provisioned after the crash', async () => {
      const v = await hosts.get(ref);
      return v.status.provisioning.state === 'provisioned' ? v : undefined;
    }, { timeoutMs: 120_000 });
    expect(done.status.operationalStatus).toBe('OK');
    expect(done.status.poweredOn).toBe(true);
    expect(bmcProxy.count(isInsert)).toBe(1);
    // One power cycle: off once, then on once. The new worker's attempt found no last word from the killed one, so
    // it gave the BMC its time to show the power-on in flight (sushy carries it out seconds later) and sent nothing.
    const resets = bmcProxy.requests.filter(isReset).slice(resetsBefore).map(resetType);
    expect(resets).toEqual(['ForceOff', 'On']);
    const provisions = done.operations.filter((o) => o.kind === 'provision');
    expect(provisions.map((o) => o.outcome)).toEqual(['succeeded']);
    // The power-on activity really died with the worker: a later attempt finished it.
    const attempts = (await operationEvents(hosts.client, ref, provisions[0]!))
      .filter((e) => e.activityTaskStartedEventAttributes)
      .map((e) => Number(e.activityTaskStartedEventAttributes!.attempt));
    expect(Math.max(...attempts)).toBeGreaterThan(1);

    await hosts.remove(ref);
    await waitFor('gone', async () => hosts.get(ref).then(() => undefined, () => true), { timeoutMs: 90_000 });
  });
});
