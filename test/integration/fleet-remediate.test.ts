/**
 * Fleet operation `remediate` (patch fleet-remediate) on the real stack
 * (Temporal, Ironic, fake-hardware nodes), API mode: one remediation per
 * selected host with the fleet's strategy, each its own remediateWorkflow;
 * a host succeeds when its remediation succeeded, and a refused one is a
 * failure that spends the failure budget. Read back from the remediations
 * and the host workflows' own power records.
 */
import { describe, expect, it } from 'vitest';
import { randomMac, uniq } from '../support/harness';
import { callApi } from '../support/api-client';
import { availableHosts, fleetEnded, startFleet, useFleetStack, waitForFleet, waitForHost } from '../support/fleet-hosts';
import { fleetRemediationUid } from '../../activities/fleet/remediate';
import { remediationQuery, remediationWorkflowId } from '../../contracts/remediation';

const stack = useFleetStack();

describe('fleet remediate', { timeout: 600_000 }, () => {
  it('remediates each host once with the strategy; a refused remediation fails its host and halts the run at the budget; a bad strategy is a 400', async () => {
    const ns = uniq('fleet');
    const hosts = await availableHosts(stack.base, stack.h, ns, ['rm-a', 'rm-b'], { rack: 'r5' });
    // An online: false host: its remediation is refused (nothing changed).
    const off = { namespace: ns, name: 'rm-c' };
    const put = await callApi(stack.base, 'PUT', `/v1/namespaces/${ns}/hosts/rm-c`, {
      metadata: { labels: { rack: 'r5' } },
      spec: { bmc: { address: 'fake://rm-c', credentialsName: 'rm-c-bmc' }, bootMACAddress: randomMac(), online: false },
      credentials: { username: 'admin', password: 'pw' },
    });
    expect(put.status, put.text).toBe(201);
    await waitForHost(stack.h, off, (v) => v.status.provisioning.state === 'available' && !v.currentOperation, 'available');

    const bad = await callApi(stack.base, 'POST', '/v1/fleet-operations', {
      name: uniq('remed'),
      operation: { kind: 'remediate', strategy: { type: 'Reboot', timeoutSeconds: 50, reinspect: {} } },
      selector: { namespace: ns },
    });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('operation.strategy.timeoutSeconds');
    expect(bad.text).toContain('operation.strategy.reinspect');

    const name = uniq('remed');
    await startFleet(stack.base, { name, operation: { kind: 'remediate', strategy: { type: 'Reboot', retryLimit: 2 } }, selector: { namespace: ns }, maxConcurrent: 1, maxFailures: 0 });
    const done = await waitForFleet(stack.base, name, fleetEnded, 'ended');
    expect(done.phase).toBe('halted');
    expect(done.counts).toMatchObject({ succeeded: 2, failed: 1 });
    expect(done.hosts.find((x) => x.ref.name === 'rm-c')).toMatchObject({
      outcome: 'failed',
      error: expect.stringMatching(/^remediation refused: Unable to remediate, Host is powered off/),
    });
    for (const ref of [...hosts, off]) {
      const x = done.hosts.find((y) => y.ref.name === ref.name)!;
      const uid = fleetRemediationUid({ ref, fleet: name, since: x.startedAt! });
      const view = await stack.h.client.workflow.getHandle(remediationWorkflowId(ref, uid)).query(remediationQuery);
      expect(view.strategy).toMatchObject({ retryLimit: 2, timeoutSeconds: 600 });
      expect(view.outcome).toBe(ref === off ? 'refused' : 'succeeded');
      // One power cycle each (off, on) for the remediated; none for the refused.
      const v = await stack.h.hosts.get(ref);
      const power = v.operations.filter((o) => o.kind === 'power' && o.outcome === 'succeeded' && o.startedAt >= x.startedAt!);
      expect(power).toHaveLength(ref === off ? 0 : 2);
      expect(v.power.holds).toEqual({});
    }
  });
});
