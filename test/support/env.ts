/**
 * The test stack: the project's own stack script on ports and a state folder
 * of its own, so tests can run beside `make demo`.
 */
import { join } from 'node:path';
import { REPO_ROOT } from '../../config/env';

export const TEST_STATE_DIR = process.env.METALFLOW_TEST_STATE_DIR ?? join(REPO_ROOT, '.state', 'test-stack');

export const TEST_PORTS = {
  temporal: Number(process.env.TEST_TEMPORAL_PORT ?? 17233),
  temporalUi: Number(process.env.TEST_TEMPORAL_UI_PORT ?? 18233),
  ironic: Number(process.env.TEST_IRONIC_PORT ?? 16385),
  sushy: Number(process.env.TEST_SUSHY_PORT ?? 18000),
};

export const TEST_ENV = {
  METALFLOW_STATE_DIR: TEST_STATE_DIR,
  TEMPORAL_PORT: String(TEST_PORTS.temporal),
  TEMPORAL_UI_PORT: String(TEST_PORTS.temporalUi),
  IRONIC_PORT: String(TEST_PORTS.ironic),
  SUSHY_PORT: String(TEST_PORTS.sushy),
  // A Redfish power change still lands after a delay the code must wait out, but within about a second
  // (sushy-tools' own range, 1-11 s, cost every Redfish test ~6 s per power change).
  SUSHY_POWER_DELAY: '0.2-1.5',
  // Ironic's power sync every 30 s (the stack's default), not shorter: for a Redfish node each sync cost Ironic 2-3
  // CPU-s of password hashing (docs/testing.md), and at 10 s the sync was a third of the shared Ironic's CPU. The
  // hashing is remembered now (below), but a sync still reads four Redfish resources per node.
  IRONIC_SYNC_POWER_STATE_INTERVAL: '30',
  // The same hash of the same BMC password is not computed again for every Redfish call (0.5 CPU-s each):
  // scripts/ironic-site/sitecustomize.py.
  IRONIC_MEMO_SESSION_HASH: '1',
  // A pool of SQLite connections instead of a new one (connect, schema parse, pragmas) per database session of
  // Ironic's: the same file says why that changes nothing but the CPU. IRONIC_SQLITE_POOL=0 in the environment
  // runs Ironic's own NullPool instead (to compare).
  IRONIC_SQLITE_POOL: process.env.IRONIC_SQLITE_POOL ?? '1',
  // An empty Ironic database is a copy of the one ironic-dbsync made for this venv before (scripts/lib/stack-config.sh,
  // ironic_db_template): some 2.4 CPU-s less per empty start.
  IRONIC_DB_TEMPLATE: process.env.IRONIC_DB_TEMPLATE ?? '1',
};

export const TEMPORAL_ADDRESS = `127.0.0.1:${TEST_PORTS.temporal}`;
export const IRONIC_URL = `http://127.0.0.1:${TEST_PORTS.ironic}`;
export const SUSHY_URL = `http://127.0.0.1:${TEST_PORTS.sushy}`;
/** The stack's server of Ironic's http_root ([deploy] http_url): scripts/stack.sh puts it 205 below Ironic's port. */
export const IRONIC_HTTP_URL = `http://127.0.0.1:${TEST_PORTS.ironic - 205}`;
export const WORKFLOW_BUNDLE_PATH = join(TEST_STATE_DIR, 'workflow-bundle.js');
/** The same with the OpenTelemetry workflow interceptors (TRACED_WORKFLOW_BUNDLE_OPTIONS): built beside it by the global setup. */
export const TRACED_WORKFLOW_BUNDLE_PATH = join(TEST_STATE_DIR, 'workflow-bundle-traced.js');
