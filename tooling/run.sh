#!/usr/bin/env bash
# The README's two commands, `pnpm demo` and `pnpm test`, run through here so that each works
# from a fresh clone: point node-gyp at the local Node headers where they exist
# (tooling/node-headers.sh), install from the lockfile, build what is needed, then run.
# pnpm's own install-before-run is off (pnpm-workspace.yaml) because it would come before that.
set -euo pipefail
cd "$(dirname "$0")/.."
export TURBO_TELEMETRY_DISABLED=1
# shellcheck source=tooling/node-headers.sh
source tooling/node-headers.sh

what=${1:?usage: tooling/run.sh demo|test|bench [args…]}
shift

pnpm install --frozen-lockfile --reporter=silent

case "$what" in
  demo | bench)
    # turbo's banner and logs go to stderr: stdout is the command's own (the demo's summary, --json).
    pnpm exec turbo run build --filter=rowclaim... --output-logs=errors-only >&2
    exec node packages/cli/dist/bin.js "$what" "$@"
    ;;
  test)
    bash tooling/start-databases.sh
    # --continue: every package's tests run even when an earlier package fails; turbo still
    # exits non-zero when any of them failed.
    if [ "$#" -gt 0 ]; then exec pnpm exec turbo run test --concurrency=1 --continue "$@"; fi
    # Everything built first, then the tests alone (--only) in two lanes: the postgres.js suite
    # (PostgreSQL, one long file) beside the packages that need no database server, then the
    # rest one package at a time. No two PostgreSQL or MariaDB packages ever run at once.
    pnpm exec turbo run build --output-logs=errors-only
    tests() { pnpm exec turbo run test --only --concurrency=1 --continue "$@"; }
    serverless=(--filter=@rowclaim/tooling --filter=@rowclaim/core --filter=@rowclaim/conformance --filter=@rowclaim/sqlite)
    status=0
    tests --filter=@rowclaim/postgres-js &
    beside=$!
    tests "${serverless[@]}" || status=1
    wait "$beside" || status=1
    tests --filter='!@rowclaim/postgres-js' "${serverless[@]/--filter=/--filter=!}" || status=1
    exit "$status"
    ;;
  *)
    echo "tooling/run.sh: unknown command '$what' (demo, test, bench)" >&2
    exit 2
    ;;
esac
