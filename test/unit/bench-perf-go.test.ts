/** bench/perf-go.ts: the shares of a Go process's CPU from `perf script` output (the naming by `go tool addr2line` is the tool's own). */
import { describe, expect, it } from 'vitest';
import { goPackage, parsePerfScript, shares } from '../../bench/perf-go';

// Two samples as `perf script -F ip,sym,dso` prints them: frames of the stripped binary carry file offsets.
const SCRIPT = `
\t         104b05f [unknown] (/opt/x/temporal)
\t           95fc1 [unknown] (/opt/x/temporal)

\tffffffff81450027 smp_call_function_many_cond+0x17 ([kernel.kallsyms])
\t          66d91c [unknown] (/opt/x/temporal)
\t           95fc1 [unknown] (/opt/x/temporal)
`;

describe('bench perf-go', () => {
  it('reads each sample leaf first, maps the binary offsets to addresses at 0x400000, names other frames', () => {
    expect(parsePerfScript(SCRIPT, '/somewhere/else/temporal')).toEqual([
      [{ addr: '0x144b05f' }, { addr: '0x495fc1' }],
      [{ name: '[[kernel.kallsyms]] smp_call_function_many_cond' }, { addr: '0xa6d91c' }, { addr: '0x495fc1' }],
    ]);
  });

  it('counts self and inclusive shares per function and package, a function once per stack', () => {
    const names = new Map([
      ['0x144b05f', 'database/sql.(*Rows).close'],
      ['0xa6d91c', 'go.temporal.io/server/service/frontend.(*WorkflowHandler).ListWorkflowExecutions'],
      ['0x495fc1', 'runtime.goexit'],
    ]);
    const s = shares(parsePerfScript(SCRIPT, 'temporal'), names);
    expect(s.samples).toBe(2);
    expect(s.self.get('database/sql.(*Rows).close')).toBe(1);
    expect(s.inclusive.get('runtime.goexit')).toBe(2);
    expect(s.inclusive.get('go.temporal.io/server/service/frontend.(*WorkflowHandler).ListWorkflowExecutions')).toBe(1);
    expect(s.packages.get('go.temporal.io/server/service/frontend')).toBe(1);
    expect(s.packages.get('[[kernel.kallsyms]]')).toBe(1);
  });

  it('takes the package from the last path element up to its first dot', () => {
    expect(goPackage('go.temporal.io/server/common/persistence/visibility.(*visibilityManagerImpl).ListWorkflowExecutions')).toBe('go.temporal.io/server/common/persistence/visibility');
    expect(goPackage('modernc.org/sqlite/lib._sqlite3VdbeExec')).toBe('modernc.org/sqlite/lib');
    expect(goPackage('runtime.mallocgc')).toBe('runtime');
  });
});
