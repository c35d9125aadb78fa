/**
 * A Temporal namespace of its own for a second plane on the test stack's
 * Temporal (host workflow ids are per namespace), with the search attributes
 * the host workflows write (scripts/search-attributes.txt).
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from '../../config/env';
import { TEMPORAL_ADDRESS } from './env';

export function createTemporalNamespace(namespace: string): void {
  const temporal = (...args: string[]) => execFileSync(join(REPO_ROOT, '.venv', 'bin', 'temporal'), [...args, '--address', TEMPORAL_ADDRESS], { encoding: 'utf8' });
  temporal('operator', 'namespace', 'create', '--namespace', namespace, '--retention', '24h');
  const lines = execFileSync('grep', ['-Ev', '^\\s*(#|$)', join(REPO_ROOT, 'scripts', 'search-attributes.txt')], { encoding: 'utf8' }).split('\n').filter(Boolean);
  for (const line of lines) {
    const [name, type] = line.trim().split('=');
    // A namespace just created may not be served for a moment: retried by the CLI's own call a few times.
    for (let attempt = 0; ; attempt++) {
      try {
        temporal('operator', 'search-attribute', 'create', '--namespace', namespace, '--name', name!, '--type', type!);
        break;
      } catch (err) {
        if (attempt >= 10) throw err;
        execFileSync('sleep', ['1']);
      }
    }
  }
}
