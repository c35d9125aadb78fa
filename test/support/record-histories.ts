/**
 * Records real histories for the replay test: one host through its whole
 * lifecycle (create → provisioned → deprovisioned → deleted) plus a failing
 * registration that recovers, on the running test stack. Run it after an
 * intended, versioned workflow change: `npm run record-histories`.
 */
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { hostWorkflowId } from '../../types/host-ref';
import { hostViewQuery, type HostView } from '../../workflows/definitions';
import { REPO_ROOT } from '../../config/env';
import { randomMac, startHarness, waitFor } from './harness';
import { TEMPORAL_ADDRESS } from './env';

const OUT = join(REPO_ROOT, 'test', 'fixtures', 'histories');
mkdirSync(OUT, { recursive: true });
const h = await startHarness();
try {
  const ref = { namespace: 'replay', name: `lifecycle-${Date.now()}` };
  const handle = h.client.workflow.getHandle(hostWorkflowId(ref));
  const state = async () => (await handle.query(hostViewQuery)).status.provisioning.state;
  await h.hosts.put(ref, {
    spec: { bmc: { address: 'fake://replay', credentialsName: 'replay-bmc' }, bootMACAddress: randomMac(), online: true },
    credentials: { username: 'admin', password: 'recorded-password' },
  });
  await waitFor('available', async () => (await state()) === 'available');
  await h.hosts.setImage(ref, { url: 'http://127.0.0.1/replay.qcow2', checksum: 'f'.repeat(64), format: 'qcow2' });
  await waitFor('provisioned', async () => (await state()) === 'provisioned');
  await h.hosts.setImage(ref, null);
  await waitFor('available again', async () => (await state()) === 'available');
  await h.hosts.remove(ref);
  const { operations: ops } = (await handle.result()) as HostView;

  // The CLI writes the canonical proto-JSON that historyFromJSON reads back.
  const save = async (workflowId: string, file: string) => {
    const temporal = join(REPO_ROOT, '.venv', 'bin', 'temporal');
    const json = execFileSync(temporal, ['workflow', 'show', '--address', TEMPORAL_ADDRESS, '-w', workflowId, '-o', 'json']);
    writeFileSync(join(OUT, file), json);
    console.log(`recorded ${workflowId} → ${file}`);
  };
  await save(hostWorkflowId(ref), 'host-lifecycle.json');
  const seen = new Set<string>();
  for (const op of ops) {
    if (seen.has(op.kind)) continue;
    seen.add(op.kind);
    await save(op.workflowId, `operation-${op.kind}.json`);
  }
} finally {
  await h.close();
}
