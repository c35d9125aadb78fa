/**
 * Records the state machine's decision table for a new version:
 *   node --import tsx test/support/record-decisions.ts <version>
 * Never overwrites (a version's table is what old runs depend on).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../config/env';
import { DECISION_SAMPLES, DECISION_SEED, decisionTable } from './decision-table';

const version = process.argv[2];
if (!version || !/^v\d+$/.test(version)) {
  console.error('usage: record-decisions.ts v<N>  (the next unused version)');
  process.exit(2);
}
const file = join(REPO_ROOT, 'test', 'fixtures', 'decisions', `decide-${version}.json`);
const table = decisionTable();
// Few distinct answers for many states: each is written once and referred to by index.
const answers = [...new Set(Object.values(table))].sort();
const index = Object.fromEntries(Object.entries(table).map(([key, a]) => [key, answers.indexOf(a)]));
const body = JSON.stringify({ seed: DECISION_SEED, samples: DECISION_SAMPLES, answers, table: index }, null, 1);
writeFileSync(file, `${body}\n`, { flag: 'wx' });
console.log(`${file}: ${Object.keys(table).length} states, ${answers.length} distinct answers`);
