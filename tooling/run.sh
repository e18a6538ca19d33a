#!/usr/bin/env bash
# The README's two commands, `pnpm demo` and `pnpm test`, run through here so that each works
# from a fresh clone: install (better-sqlite3 compiles against Node's headers in /usr, which pnpm
# only learns from npm_config_nodedir), build what is needed, then run.
set -euo pipefail
cd "$(dirname "$0")/.."
export TURBO_TELEMETRY_DISABLED=1
export npm_config_nodedir="${npm_config_nodedir:-/usr}"

what=${1:?usage: tooling/run.sh demo|test|bench [args…]}
shift

pnpm install --frozen-lockfile --reporter=silent

case "$what" in
  demo | bench)
    pnpm exec turbo run build --filter=rowclaim... --output-logs=errors-only
    exec node packages/cli/dist/bin.js "$what" "$@"
    ;;
  test)
    bash tooling/start-databases.sh
    exec pnpm exec turbo run test --concurrency=1 "$@"
    ;;
  *)
    echo "tooling/run.sh: unknown command '$what' (demo, test, bench)" >&2
    exit 2
    ;;
esac
