/**
 * Network and meta data read from Secrets at deploy, on the real Ironic
 * (fake-hardware): YAML as CAPM3's Metal3Data writes it deploys, like JSON; a
 * value that is no mapping fails the deploy naming the Secret's role, never
 * quoting it.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ApplicationFailure } from '@temporalio/common';
import { IronicClient } from '../../clients/ironic/client';
import { createIronicActivities } from '../../activities/ironic/activities';
import { LocalSecretStore } from '../../clients/secrets/local-store';
import { IRONIC_URL } from '../support/env';
import { randomMac, uniq } from '../support/harness';

const secrets = new LocalSecretStore(mkdtempSync(join(tmpdir(), 'mf-cd-')), randomBytes(32));
const ironic = new IronicClient({ url: IRONIC_URL });
const acts = createIronicActivities({ ironic, secrets, poll: { initialMs: 100, factor: 1.5, maxMs: 1000 } });
const NS = 'config-drive';
const image = { url: 'http://127.0.0.1/images/demo.qcow2', checksum: 'b'.repeat(64), checksumType: 'sha256' as const, format: 'qcow2' as const };

async function availableNode() {
  const ref = { namespace: NS, name: uniq('cd') };
  await secrets.write(NS, `${ref.name}-bmc`, { username: 'admin', password: 'pw' });
  const spec = { bmc: { address: `fake://${ref.name}`, credentialsName: `${ref.name}-bmc` }, bootMACAddress: randomMac(), online: true };
  const { nodeId } = await acts.ensureNode({ ref, spec });
  await acts.manageNode({ ref, nodeId });
  await acts.provideNode({ ref, nodeId, automatedCleaning: false });
  return { ref, nodeId };
}

describe('config drive network and meta data', () => {
  it('deploys with YAML network data and meta data, as CAPM3 renders them', async () => {
    const { ref, nodeId } = await availableNode();
    await secrets.write(NS, `${ref.name}-nd`, { networkData: 'links:\n  - id: enp1s0\n    type: phy\n    ethernet_mac_address: 52:54:00:00:00:01\nnetworks: []\nservices: []\n' });
    await secrets.write(NS, `${ref.name}-md`, { metaData: 'local-hostname: worker-0\nproviderid: metal3://x\n' });
    const deployed = await acts.deployNode({ ref, nodeId, image, networkData: { name: `${ref.name}-nd` }, metaData: { name: `${ref.name}-md` } });
    expect(deployed.provisionState).toBe('active');
    await acts.undeployNode({ ref, nodeId, automatedCleaning: false });
    await acts.deleteNode({ ref, nodeId });
  });

  it('fails the deploy when network data is no mapping, saying so without quoting it', async () => {
    const { ref, nodeId } = await availableNode();
    await secrets.write(NS, `${ref.name}-nd`, { networkData: '- S3CR3T-route\n- 10.0.0.1\n' });
    const err = await acts.deployNode({ ref, nodeId, image, networkData: { name: `${ref.name}-nd` } }).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect((err as ApplicationFailure).message).toMatch(/networkData secret must hold a JSON object or YAML mapping: it must be a mapping .* not a list/);
    expect((err as ApplicationFailure).message).not.toContain('S3CR3T');
    await acts.deleteNode({ ref, nodeId });
  });
});
