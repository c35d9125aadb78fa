#!/usr/bin/env bash
# make test: the type check beside every test (vitest's global setup starts a
# test stack of its own on other ports and stops it after). The last line is
# the plain summary CI reads: "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
rm -f test-results/vitest.json test-results/flaky.json test-results/timing.json test-results/unhandled.json
mkdir -p test-results
rc=0
# The type check (single-threaded, ~35 s) runs while the global setup starts the stack and the first files run:
# on 2 cores it costs the run a few seconds instead of its whole length. Its output comes after vitest's.
started=$SECONDS
( npx tsc --noEmit -p . >test-results/typecheck.log 2>&1; echo $? >test-results/typecheck.rc; echo $((SECONDS - started)) >test-results/typecheck.seconds ) &
typecheck=$!
npx vitest run || rc=$?
wait $typecheck
if [ "$(cat test-results/typecheck.rc 2>/dev/null)" != 0 ]; then
  cat test-results/typecheck.log
  echo "type check failed"
  rc=1
fi
export TYPECHECK_SECONDS="$(cat test-results/typecheck.seconds 2>/dev/null)"
node scripts/test-summary.mjs test-results/vitest.json $rc
exit $rc
