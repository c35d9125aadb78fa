/**
 * decide() runs inside the host workflow, so what it answered for a state an
 * old run can be in must never change (item 10: its logic once changed with no
 * patch). Every recorded table (test/fixtures/decisions/decide-v<N>.json) is
 * computed again with today's code and compared state by state.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../config/env';
import { decisionTable } from '../support/decision-table';

const DIR = join(REPO_ROOT, 'test', 'fixtures', 'decisions');

interface RecordedTable {
  seed: number;
  samples: number;
  answers: string[];
  table: Record<string, number>;
}

const versions = readdirSync(DIR).filter((f) => /^decide-v\d+\.json$/.test(f));

describe('the state machine decides as every recorded version did', () => {
  it('has at least one recorded table', () => expect(versions.length).toBeGreaterThan(0));

  it.each(versions)('%s', (file) => {
    const recorded = JSON.parse(readFileSync(join(DIR, file), 'utf8')) as RecordedTable;
    const today = decisionTable(recorded.seed, recorded.samples);
    const changed = Object.entries(recorded.table)
      .filter(([key, i]) => today[key] !== recorded.answers[i])
      .map(([key, i]) => `${key}\n    recorded: ${recorded.answers[i]}\n    today:    ${today[key] ?? '(state not sampled)'}`);
    // A rule that must change: switch it on with a HostState field set behind patched(), so the
    // states of old runs (which lack it) decide as before; then record the next version's table.
    expect(changed.slice(0, 5), `${changed.length} of ${Object.keys(recorded.table).length} states decide differently`).toEqual([]);
  });
});
