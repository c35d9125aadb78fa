/**
 * Records a host whose accepted specs later, stricter input rules refuse (a
 * RAID config, firmware settings, a custom deploy method, a description of
 * 10,000 characters, an upper-case boot MAC to normalise): the replay test
 * shows the update handlers do not judge recorded specs again. Record it with
 * the code from before those rules. Never overwrites a fixture.
 * `node --import tsx test/support/record-input-histories.ts` on a running test stack.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { REPO_ROOT } from '../../config/env';
import { hostWorkflowId } from '../../types/host-ref';
import { applySpecUpdate, hostViewQuery } from '../../workflows/definitions';
import type { hostWorkflow } from '../../workflows/host';
import { TEMPORAL_ADDRESS } from './env';
import { randomMac, startHarness, waitFor } from './harness';

const OUT = join(REPO_ROOT, 'test', 'fixtures', 'histories');
const FILE = 'host-spec-refused-by-later-rules.json';
const h = await startHarness();
try {
  const ref = { namespace: 'replay', name: `old-rules-${Date.now()}` };
  const id = hostWorkflowId(ref);
  await h.secrets.write(ref.namespace, 'old-rules-bmc', { username: 'admin', password: 'password' });
  const start = new WithStartWorkflowOperation<typeof hostWorkflow>('hostWorkflow', {
    workflowId: id,
    taskQueue: h.taskQueue,
    args: [{ ref, options: { errorBackoffSeconds: 1, maxErrorBackoffSeconds: 2 } }],
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
  const spec = {
    bmc: { address: 'fake://old-rules', credentialsName: 'old-rules-bmc' },
    bootMACAddress: randomMac().toUpperCase(),
    online: true,
    raid: { softwareRAIDVolumes: [{ level: '1' }] },
    firmware: { sriovEnabled: true },
    customDeploy: { method: 'install_coreos' },
    description: 'd'.repeat(10_000),
  };
  await h.client.workflow.executeUpdateWithStart(applySpecUpdate, { args: [spec], startWorkflowOperation: start });
  const handle = h.client.workflow.getHandle(id);
  await waitFor('available', async () => (await handle.query(hostViewQuery)).status.provisioning.state === 'available', { timeoutMs: 120_000 });
  // A second accepted spec, so the replay goes through the handler twice.
  await handle.executeUpdate(applySpecUpdate, { args: [{ ...spec, description: 'e'.repeat(10_000) }] });
  await waitFor('the change applied', async () => (await handle.query(hostViewQuery)).spec?.description?.startsWith('e'));
  await handle.terminate('recorded');
  const json = execFileSync(join(REPO_ROOT, '.venv', 'bin', 'temporal'), ['workflow', 'show', '--address', TEMPORAL_ADDRESS, '-w', id, '-o', 'json']);
  writeFileSync(join(OUT, FILE), json, { flag: 'wx' });
  console.log(`recorded ${id} → ${FILE}`);
} finally {
  await h.close();
}
