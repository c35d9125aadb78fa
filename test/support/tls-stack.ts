/**
 * An Ironic and a sushy-tools Redfish emulator that serve HTTPS only, started
 * through the project's scripts/stack.sh (IRONIC_CERT_FILE / IRONIC_KEY_FILE,
 * SUSHY_EMULATOR_SSL_CERT / _KEY) on free ports and a state folder of their
 * own, beside the test stack. The certificate is the test's (certs.ts).
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from '../../config/env';
import { unusedPort } from './ports';

export interface TlsStack {
  ironicUrl: string;
  sushyUrl: string;
  ironicPort: number;
  sushyPort: number;
  stop(): void;
}

const STATE_DIR = join(REPO_ROOT, '.state', 'tls-test-stack');

function stack(command: 'start' | 'stop', env: Record<string, string>): void {
  try {
    execFileSync('bash', [join(REPO_ROOT, 'scripts', 'stack.sh'), command, 'sushy', 'ironic'], {
      env: { ...process.env, IRONIC_MEMO_SESSION_HASH: '1', IRONIC_SQLITE_POOL: '1', IRONIC_DB_TEMPLATE: '1', METALFLOW_STATE_DIR: STATE_DIR, ...env },
      stdio: 'pipe',
      encoding: 'utf8',
    });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`scripts/stack.sh ${command} sushy ironic (${STATE_DIR}) failed: ${e.stderr || e.stdout || e.message}`);
  }
}

/** Starts both with `cert`/`key` as their server certificate (anything a previous run left is stopped first). */
export async function startTlsStack(cert: string, key: string): Promise<TlsStack> {
  const ports = new Set<number>();
  while (ports.size < 4) ports.add(await unusedPort());
  const [temporal, ui, ironic, sushy] = [...ports] as [number, number, number, number];
  const env = {
    TEMPORAL_PORT: String(temporal),
    TEMPORAL_UI_PORT: String(ui),
    IRONIC_PORT: String(ironic),
    SUSHY_PORT: String(sushy),
    SUSHY_POWER_DELAY: '0-0.5',
  };
  stack('stop', env);
  stack('start', { ...env, IRONIC_CERT_FILE: cert, IRONIC_KEY_FILE: key, SUSHY_EMULATOR_SSL_CERT: cert, SUSHY_EMULATOR_SSL_KEY: key });
  return {
    ironicUrl: `https://127.0.0.1:${ironic}`,
    sushyUrl: `https://127.0.0.1:${sushy}`,
    ironicPort: ironic,
    sushyPort: sushy,
    stop: () => stack('stop', env),
  };
}
