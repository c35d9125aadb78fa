#!/usr/bin/env bash
# make test: type-check, then every test (vitest's global setup starts a test
# stack of its own on other ports and stops it after). The last line is the
# plain summary CI reads: "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
rm -f test-results/vitest.json test-results/flaky.json test-results/timing.json
rc=0
started=$SECONDS
npx tsc --noEmit -p . || rc=$?
if [ $rc -ne 0 ]; then echo "type check failed"; fi
export TYPECHECK_SECONDS=$((SECONDS - started))
npx vitest run || rc=$?
node scripts/test-summary.mjs test-results/vitest.json $rc
exit $rc
