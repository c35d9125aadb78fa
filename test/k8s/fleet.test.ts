/**
 * The shim at fleet scale: BareMetalHosts applied at once (10 in `make test`,
 * each going through about ten status changes, so hundreds of watch events;
 * `METALFLOW_FLEET_TEST_HOSTS=200 npx vitest run test/k8s/fleet.test.ts`, as
 * `npm run test:scale` does, for the full-size run, which took ~5 minutes of
 * the suite alone). It keeps the one shared Ironic busy, so vitest.config.ts
 * runs this file in a group of its own after every other file (beside it,
 * their 60 s waits starved and failed on CI).
 */
import { describe, expect, it } from 'vitest';
import { uniq, waitFor } from '../support/harness';
import { kubectl } from './kube-harness';
import { fakeHostSpec, hostDoc, secretDoc } from './manifests';
import { useShimSuite } from './shim-harness';

const NS = uniq('mf-fleet');
useShimSuite(NS, uniq('tq-fleet'));
const HOSTS = fleetSize(process.env.METALFLOW_FLEET_TEST_HOSTS);

function fleetSize(raw: string | undefined): number {
  if (raw === undefined || raw === '') return 10;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`METALFLOW_FLEET_TEST_HOSTS must be a whole number ≥ 1 (got "${raw}")`);
  return n;
}

describe('the Kubernetes shim with a fleet', () => {
  it(`brings ${HOSTS} hosts applied at once to available without listing per event`, async () => {
    const listsBefore = listCount();
    const items: Record<string, unknown>[] = [];
    for (let i = 0; i < HOSTS; i++) {
      const name = `fleet-${i}`;
      items.push(secretDoc(`${name}-bmc-secret`, { username: 'admin', password: 'x' }), hostDoc(name, fakeHostSpec(name)));
    }
    kubectl(['apply', '-n', NS, '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items }) });
    let ownLists = 0;
    await waitFor(
      `${HOSTS} hosts available`,
      async () => {
        ownLists += 1; // this poll is a LIST too
        const bmhs = JSON.parse(kubectl(['get', 'bmh', '-n', NS, '-o', 'json']).stdout).items as {
          status?: { provisioning?: { state?: string } };
        }[];
        return bmhs.filter((b) => b.status?.provisioning?.state === 'available').length === HOSTS;
      },
      { timeoutMs: 900_000, intervalMs: 5000 },
    );
    // One list at start and one per re-list; hundreds of events must not cause hundreds of lists.
    expect(listCount() - listsBefore - ownLists).toBeLessThanOrEqual(3);
  }, 1_000_000);
});

/** LIST requests for baremetalhosts the API server has answered (its own metrics). */
function listCount(): number {
  const metrics = kubectl(['get', '--raw', '/metrics']).stdout;
  let total = 0;
  for (const line of metrics.split('\n')) {
    if (line.startsWith('apiserver_request_total{') && line.includes('resource="baremetalhosts"') && line.includes('verb="LIST"')) {
      total += Number(line.slice(line.lastIndexOf(' ') + 1));
    }
  }
  return total;
}
