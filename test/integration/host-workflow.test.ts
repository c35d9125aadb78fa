/**
 * The host workflow on the real Temporal dev server, with a worker whose
 * activities talk to the real Ironic. A fix accepted during a backoff runs on
 * the time-skipping server (test/unit/host-time-skipping.test.ts).
 */
import { decodedHistoryTexts, findSecrets, type DecodedText } from '../../bench/support/history-secrets';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WithStartWorkflowOperation, WorkflowUpdateFailedError } from '@temporalio/client';
import type { HostSpec } from '../../model/host';
import { hostWorkflowId } from '../../model/host-ref';
import { applySpecUpdate, hostViewQuery, type HostView } from '../../contracts/host';
import type { hostWorkflow } from '../../workflows/host/host';
import { FAST_HOST_OPTIONS, randomMac, startHarness, uniq, waitFor, type Harness } from '../support/harness';
import { SUSHY_URL } from '../support/env';
import { ironicNodeName } from '../../model/host-ref';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

const NS = 'workflows';
const PASSWORD = `pw-${uniq('secret')}`;
const USER_DATA = `#cloud-config\n# marker ${uniq('userdata')}\n`;

const fakeSpec = (name: string, over: Partial<HostSpec> = {}): HostSpec => ({
  bmc: { address: `fake://${name}`, credentialsName: `${name}-bmc-secret` },
  bootMACAddress: randomMac(),
  online: true,
  ...over,
});

const view = (name: string): Promise<HostView> =>
  h.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name })).query(hostViewQuery);

const waitState = (name: string, state: string, timeoutMs = 60_000) =>
  waitFor(`${name} to reach ${state}`, async () => {
    const v = await view(name);
    return v.status.provisioning.state === state ? v : undefined;
  }, { timeoutMs });

/** The host's workflow and each operation's child, every payload decoded (bench/support/history-secrets.ts). */
async function allHistories(name: string): Promise<DecodedText[]> {
  return decodedHistoryTexts(h.client, hostWorkflowId({ namespace: NS, name }));
}

describe('host workflow', () => {
  it('enrolls, inspects, prepares and provisions a host, with no secret in any history', async () => {
    const name = uniq('wf');
    const { view: created } = await h.hosts.put(
      { namespace: NS, name },
      { spec: fakeSpec(name), credentials: { username: 'admin', password: PASSWORD } },
    );
    expect(created.generation).toBe(1);
    const available = await waitState(name, 'available');
    expect(available.status.operationalStatus).toBe('OK');
    expect(available.status.provisioning.ID).toMatch(/^[0-9a-f-]{36}$/);
    expect(available.status.operationHistory.register.end).toBeTruthy();
    expect(available.status.operationHistory.inspect.end).toBeTruthy();
    expect(available.operations.slice(0, 3).map((o) => `${o.kind}:${o.outcome}`)).toEqual([
      'enroll:succeeded',
      'inspect:succeeded',
      'prepare:succeeded',
    ]);
    // fake-hardware starts with no power state; spec.online asks for power on.
    await waitFor('powered on', async () => (await view(name)).status.poweredOn);

    await h.hosts.put(
      { namespace: NS, name },
      {
        spec: fakeSpec(name, {
          bootMACAddress: available.spec!.bootMACAddress,
          image: { url: 'http://127.0.0.1/img.qcow2', checksum: 'c'.repeat(32), checksumType: 'md5', format: 'qcow2' },
        }),
        userData: USER_DATA,
      },
    );
    const provisioned = await waitState(name, 'provisioned');
    expect(provisioned.status.poweredOn).toBe(true);
    expect(provisioned.status.provisioning.image?.url).toBe('http://127.0.0.1/img.qcow2');
    const node = await h.ironic.getNode(provisioned.status.provisioning.ID);
    expect(node?.provision_state).toBe('active');

    // Search attributes let the UI filter hosts.
    const desc = await h.client.workflow.getHandle(hostWorkflowId({ namespace: NS, name })).describe();
    expect(desc.searchAttributes.MetalflowProvisioningState).toEqual(['provisioned']);
    expect(desc.searchAttributes.MetalflowBmcType).toEqual(['fake']);
    expect(desc.searchAttributes.MetalflowHostNamespace).toEqual([NS]);

    const histories = await allHistories(name);
    // The check reads real, decoded history: the host's name is in the activities' decoded inputs
    // (in the host's own history: operations run inside it).
    expect(histories.some((t) => t.where.includes('activityTaskScheduledEventAttributes.input') && t.text.includes(`"name":"${name}"`))).toBe(true);
    expect(findSecrets(histories, [PASSWORD, 'marker userdata'])).toEqual([]);
  });

  it('records an operation failure with a bounded backoff and recovers once the cause is fixed', async () => {
    const name = uniq('wf-err');
    const ref = { namespace: NS, name };
    // Straight to the workflow, without the API's pre-check that the secret exists.
    const start = new WithStartWorkflowOperation<typeof hostWorkflow>('hostWorkflow', {
      workflowId: hostWorkflowId(ref),
      taskQueue: h.taskQueue,
      args: [{ ref, options: FAST_HOST_OPTIONS }],
      workflowIdConflictPolicy: 'USE_EXISTING',
    });
    await h.client.workflow.executeUpdateWithStart(applySpecUpdate, { args: [fakeSpec(name)], startWorkflowOperation: start });
    const failing = await waitFor('two recorded failures', async () => {
      const v = await view(name);
      return v.status.errorCount >= 2 ? v : undefined;
    });
    expect(failing.status.provisioning.state).toBe('registering');
    expect(failing.status.operationalStatus).toBe('error');
    expect(failing.status.errorType).toBe('registration error');
    expect(failing.status.errorMessage).toBe(`Secret ${NS}/${name}-bmc-secret not found`);
    expect(failing.operations.filter((o) => o.outcome === 'failed').length).toBeGreaterThanOrEqual(2);

    await h.secrets.write(NS, `${name}-bmc-secret`, { username: 'admin', password: 'pw' });
    const ok = await waitState(name, 'available');
    expect(ok.status.errorCount).toBe(0);
    expect(ok.status.errorType).toBe('');
    expect(ok.status.operationalStatus).toBe('OK');
  });

  it('continues as new while an operation keeps failing, keeping the error, its count and the backoff', async () => {
    const name = uniq('wf-can-err');
    const ref = { namespace: NS, name };
    const handle = h.client.workflow.getHandle(hostWorkflowId(ref));
    // No Secret: enroll fails every time. A tiny history limit makes the failure loop hand over to new runs.
    const start = new WithStartWorkflowOperation<typeof hostWorkflow>('hostWorkflow', {
      workflowId: hostWorkflowId(ref),
      taskQueue: h.taskQueue,
      args: [{ ref, options: { errorBackoffSeconds: 1, maxErrorBackoffSeconds: 1, maxHistoryEvents: 20 } }],
      workflowIdConflictPolicy: 'USE_EXISTING',
    });
    await h.client.workflow.executeUpdateWithStart(applySpecUpdate, { args: [fakeSpec(name)], startWorkflowOperation: start });
    const firstRun = (await handle.describe()).runId;
    const before = await waitFor('a recorded failure', async () => {
      const v = await view(name);
      return v.status.errorCount >= 1 ? v : undefined;
    });
    // A later run (continued as new from the backoff), still failing, with the count carried on.
    const later = await waitFor('a new run that carried the error on', async () => {
      const d = await handle.describe();
      if (d.runId === firstRun) return undefined;
      const v = await view(name);
      return v.status.errorCount > before.status.errorCount ? { runId: d.runId, v } : undefined;
    }, { timeoutMs: 90_000 });
    expect(later.v.status.errorType).toBe('registration error');
    expect(later.v.status.errorMessage).toBe(`Secret ${NS}/${name}-bmc-secret not found`);
    expect(later.v.status.operationalStatus).toBe('error');
    // Every run stays small.
    const history = await h.client.workflow.getHandle(hostWorkflowId(ref), firstRun).fetchHistory();
    expect(history.events!.length).toBeLessThan(60);

    await h.secrets.write(NS, `${name}-bmc-secret`, { username: 'admin', password: 'pw' });
    const ok = await waitState(name, 'available', 90_000);
    expect(ok.status.errorCount).toBe(0);
  });

  it('rejects an invalid spec in the update validator and keeps the current one', async () => {
    const name = uniq('wf-val');
    const ref = { namespace: NS, name };
    await h.hosts.put(ref, { spec: fakeSpec(name), credentials: { username: 'a', password: 'b' } });
    const before = await view(name);
    const bad = { ...fakeSpec(name), bootMACAddress: 'not-a-mac' };
    const err = await h.client.workflow
      .getHandle(hostWorkflowId(ref))
      .executeUpdate(applySpecUpdate, { args: [bad] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
    expect(String((err as WorkflowUpdateFailedError).cause?.message)).toMatch(/^spec\.bootMACAddress: /);
    const after = await view(name);
    expect(after.generation).toBe(before.generation);
    expect(after.spec).toEqual(before.spec);
  });

  it('continues as new with its state when history grows, and keeps working', async () => {
    const name = uniq('wf-can');
    const ref = { namespace: NS, name };
    const handle = h.client.workflow.getHandle(hostWorkflowId(ref));
    const start = new WithStartWorkflowOperation<typeof hostWorkflow>('hostWorkflow', {
      workflowId: hostWorkflowId(ref),
      taskQueue: h.taskQueue,
      args: [{ ref, options: { ...FAST_HOST_OPTIONS, maxHistoryEvents: 40 } }],
      workflowIdConflictPolicy: 'USE_EXISTING',
    });
    await h.secrets.write(NS, `${name}-bmc-secret`, { username: 'a', password: 'b' });
    const spec = fakeSpec(name);
    await h.client.workflow.executeUpdateWithStart(applySpecUpdate, { args: [spec], startWorkflowOperation: start });
    // Read before the host is available: the first run may hand over as soon as it is idle there.
    const firstRun = (await handle.describe()).runId;
    const available = await waitState(name, 'available');
    // Power toggles add history while idle in `available`.
    await handle.executeUpdate(applySpecUpdate, { args: [{ ...spec, online: false }] });
    await waitFor('power off', async () => (await view(name)).status.poweredOn === false);
    await waitFor('a new run', async () => (await handle.describe()).runId !== firstRun);
    const carried = await view(name);
    expect(carried.status.provisioning.ID).toBe(available.status.provisioning.ID);
    expect(carried.status.provisioning.state).toBe('available');
    expect(carried.operations.length).toBeGreaterThanOrEqual(4);
    await handle.executeUpdate(applySpecUpdate, { args: [{ ...spec, online: true }] });
    await waitFor('power on after continue-as-new', async () => (await view(name)).status.poweredOn === true);
  });

  describe('enrollment pre-flight against the real Redfish BMC (sushy-tools)', () => {
    const system = '/redfish/v1/Systems/6d660000-0000-4000-8000-000000000003';
    const cases: [string, string, string, RegExp][] = [
      ['a wrong password', `redfish+${SUSHY_URL}${system}`, `not-the-password-${uniq('x')}`, /401|credentials/i],
      ['an unknown system id', `redfish+${SUSHY_URL}/redfish/v1/Systems/no-such-system`, 'password', /no-such-system|not found/i],
      ['a BMC port nobody listens on', `redfish+http://127.0.0.1:9${system}`, 'password', /refused/i],
    ];
    it.each(cases)('records %s as a registration error naming the cause, before touching Ironic', async (_what, address, password, cause) => {
      const name = uniq('wf-pre');
      const ref = { namespace: NS, name };
      await h.hosts.put(ref, {
        spec: { bmc: { address, credentialsName: `${name}-bmc` }, online: false, automatedCleaningMode: 'disabled' },
        credentials: { username: 'admin', password },
      });
      const failed = await waitFor('a registration error', async () => {
        const v = await view(name);
        return v.status.errorType === 'registration error' ? v : undefined;
      });
      expect(failed.status.errorMessage).toMatch(cause);
      expect(failed.status.errorMessage).not.toContain(password);
      expect(await h.ironic.getNode(ironicNodeName(ref))).toBeUndefined();
      await h.hosts.remove(ref);
    });
  });
});
