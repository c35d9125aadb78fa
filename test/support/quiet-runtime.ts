// Each test process logs Temporal's SDK and core messages at WARN and above only:
// the test output is the assertions.
import { DefaultLogger, Runtime } from '@temporalio/worker';

Runtime.install({ logger: new DefaultLogger('WARN') });
