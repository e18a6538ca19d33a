#!/usr/bin/env bash
# The load check: runs the whole `pnpm test` N times in a row (default 3) while a CPU burner keeps
# every core busy, and stops at the first failure. It sets ROWCLAIM_LOAD=1, which turns on the
# longest checks that a plain `pnpm test` (and so .ci/run) leaves out:
#   - the conformance heap test (100,000 rows) on PostgreSQL, MariaDB and SQLite (the in-memory
#     reference driver runs it in every pnpm test: tooling/test-env.mjs, heapTestOptOut);
#   - the conformance start-up fault tests before every start-up statement in turn, per form, on
#     PostgreSQL and MariaDB (a plain run ends the sessions before the first statement of each
#     kind only: tooling/test-env.mjs, loadStepOptOuts);
#   - deeper kill loops, larger drains, the 20-process unique-key runs.
# Tests must wait for the states they assert, never for fixed times; on a loaded machine a test
# that does not is found here.
#
#   tooling/load-check.sh [runs]        # from the repository root; ROWCLAIM_LOAD_BURNERS=n burners
#
# The databases must be up (tooling/ starts them; the test URLs come from the environment as for
# `pnpm test`). Prints each pass's time and the total; exits non-zero on the first failing pass.
set -euo pipefail

runs="${1:-3}"
if ! [[ "$runs" =~ ^[1-9][0-9]*$ ]]; then
  echo "load-check: runs must be a positive whole number, not '$runs'" >&2
  exit 2
fi
cd "$(dirname "$0")/.."

cores="$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)"
burners="${ROWCLAIM_LOAD_BURNERS:-$cores}"
pids=()

stop_burners() {
  for pid in "${pids[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  pids=()
}
trap stop_burners EXIT
trap 'exit 130' INT TERM

for _ in $(seq 1 "$burners"); do
  node -e 'for (;;) {}' &
  pids+=("$!")
done
export ROWCLAIM_LOAD=1
echo "load-check: ${burners} CPU burner(s) running on ${cores} core(s); ${runs} pass(es) of pnpm test"

export npm_config_nodedir="${npm_config_nodedir:-/usr}" TURBO_TELEMETRY_DISABLED=1
started="$(date +%s)"
for pass in $(seq 1 "$runs"); do
  pass_started="$(date +%s)"
  echo "load-check: pass ${pass}/${runs} starts"
  # turbo never caches test results (turbo.json), so every pass runs every test.
  if ! pnpm test; then
    echo "load-check: pass ${pass}/${runs} FAILED after $(($(date +%s) - pass_started)) s" >&2
    exit 1
  fi
  echo "load-check: pass ${pass}/${runs} passed in $(($(date +%s) - pass_started)) s"
done
echo "load-check: ${runs} pass(es) passed under load in $(($(date +%s) - started)) s"
