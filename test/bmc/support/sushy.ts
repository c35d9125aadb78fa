/**
 * The tests' own sushy-tools Redfish emulator, started through the project's
 * scripts/stack.sh (fake systems, basic auth admin/password) on ports and a
 * state folder of its own, so it runs beside `make demo` and `make test`.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from '../../../config/env';

// Overridable so two checkouts can run the BMC tests at once.
export const SUSHY_PORT = Number(process.env.TEST_BMC_SUSHY_PORT ?? 22800);
export const SUSHY_URL = `http://127.0.0.1:${SUSHY_PORT}`;
export const SUSHY_USER = 'admin';
export const SUSHY_PASSWORD = 'password';

/** Systems of scripts/sushy-fake-systems.json. */
export const SUSHY_SYSTEMS = {
  bm01: '/redfish/v1/Systems/6d660000-0000-4000-8000-000000000001',
  bm02: '/redfish/v1/Systems/6d660000-0000-4000-8000-000000000002',
  bm03: '/redfish/v1/Systems/6d660000-0000-4000-8000-000000000003',
  bm04: '/redfish/v1/Systems/6d660000-0000-4000-8000-000000000004',
};

/** The script's env for an emulator with its own state folder and port (the other ports only need to differ). */
const envOf = (stateName: string, port: number) => ({
  METALFLOW_STATE_DIR: join(REPO_ROOT, '.state', stateName),
  SUSHY_PORT: String(port),
  TEMPORAL_PORT: String(port + 1),
  TEMPORAL_UI_PORT: String(port + 2),
  IRONIC_PORT: String(port + 3),
  // fake power changes land 0-0.5 s after the request (upstream: 1-11 s)
  SUSHY_POWER_DELAY: '0-0.5',
});

function stack(command: 'start' | 'stop', env: Record<string, string>): void {
  try {
    execFileSync('bash', [join(REPO_ROOT, 'scripts', 'stack.sh'), command, 'sushy'], {
      env: { ...process.env, ...env },
      stdio: 'pipe',
      encoding: 'utf8',
    });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`scripts/stack.sh ${command} sushy failed: ${e.stderr || e.stdout || e.message}`);
  }
}

const ENV = envOf('bmc-test-stack', SUSHY_PORT);
export const startSushy = (): void => stack('start', ENV);
export const stopSushy = (): void => stack('stop', ENV);

/**
 * One more emulator, for a test file that changes its systems' power: its own
 * state folder (`.state/<stateName>`) and port, so no other file shares it.
 */
export function ownSushy(stateName: string, port: number): { url: string; start(): void; stop(): void } {
  const env = envOf(stateName, port);
  return { url: `http://127.0.0.1:${port}`, start: () => stack('start', env), stop: () => stack('stop', env) };
}
