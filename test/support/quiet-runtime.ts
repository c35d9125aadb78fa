// Each test process logs Temporal's SDK and core messages at WARN and above only:
// the test output is the assertions.
import { DefaultLogger, Runtime } from '@temporalio/worker';

// Files that share a process (the unit tier runs without isolation) install it once.
const installed = Symbol.for('metalflow.quietRuntime');
const g = globalThis as { [installed]?: true };
if (!g[installed]) {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  g[installed] = true;
}
