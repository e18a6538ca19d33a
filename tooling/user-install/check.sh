#!/usr/bin/env bash
# Install as a user would: pack every public package, lint each tarball (publint, and
# arethetypeswrong for every entry point), then in fresh folders outside the workspace install
# core + ONE driver from the tarballs with npm, check that no other driver or database client
# came along, type-check the README quick start as the user's own file under `strict` (no
# skipLibCheck) and run it against the real database (PostgreSQL on pg and on postgres.js); the same for a CommonJS project; the
# command line with the PostgreSQL driver only (no other client installed, DRIVER_NOT_INSTALLED
# for another database); `@rowclaim/sqlite/sql` without better-sqlite3; finally install the packed
# conformance suite the way a third-party driver author does and run a representative set of its
# sub-suites against the packed PostgreSQL driver (conformance/conformance.test.ts says which: it
# proves the tarballs work; the workspace's run of the whole suite proves the behaviour).
# Any failure exits non-zero. Usage: tooling/user-install/check.sh [work-dir]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=tooling/node-headers.sh
source "$root/tooling/node-headers.sh"
work=${1:-$(mktemp -d "${TMPDIR:-/tmp}/rowclaim-user-install.XXXXXX")}
mkdir -p "$work"
packs="$work/packs"
rm -rf "$packs" && mkdir -p "$packs"
log() { printf '[user-install] %s\n' "$*"; }
fail() { printf '[user-install] FAILED: %s\n' "$*" >&2; exit 1; }

# The versions a user gets: the workspace's pins of the clients and tools.
TS=5.9.3 NODE_TYPES=^20.19.0 PG=8.23.1 POSTGRES_JS=3.4.9 PG_TYPES=8.23.1 MYSQL2=3.24.6 SQLITE=12.11.1 SQLITE_TYPES=9.6.0
VITEST=4.1.12 VITE=8.3.8

log "packing into $packs"
public=()
for dir in "$root"/packages/*/; do
  name=$(node -p "const p = require('$dir/package.json'); p.private ? '' : p.name")
  [ -n "$name" ] || continue
  (cd "$dir" && pnpm pack --pack-destination "$packs" >/dev/null) || fail "pnpm pack failed in ${dir#"$root"/}"
  public+=("$name")
done
tarball() { # package name -> its tarball
  local base=${1#@}; base=${base//\//-}
  ls "$packs"/"$base"-[0-9]*.tgz 2>/dev/null | head -n 1
}
for name in "${public[@]}"; do [ -f "$(tarball "$name")" ] || fail "no tarball for $name"; done

log "publint and arethetypeswrong"
lint=$root/tooling/node_modules/.bin
for name in "${public[@]}"; do
  file=$(tarball "$name")
  "$lint/publint" run "$file" --strict || fail "publint: $name"
  if [ "$name" != "rowclaim" ]; then # the CLI exports no module, only its bin
    # ES modules only, with a `default` condition so that require() finds them: Node 20.19+ and
    # 22.12+ load ES modules from require() (the CommonJS project below runs that), which attw
    # 0.18 does not model, so its CJS rows ("dynamic import only") are informational.
    "$lint/attw" "$file" --profile esm-only || fail "arethetypeswrong: $name"
  fi
done

# npm, not pnpm: the most common user install, and one that resolves peers the way npm does.
npm_install() { # dir, args...
  local dir=$1; shift
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error "$@") || fail "npm install in $dir"
}
new_app() { # name [module type] -> dir, with a package.json of its own
  local dir="$work/$1"
  rm -rf "$dir" && mkdir -p "$dir"
  printf '{ "name": "%s", "private": true, "type": "%s" }\n' "$1" "${2:-module}" >"$dir/package.json"
  echo "$dir"
}
absent() { # app dir, what brought them, packages... -> fails if any is installed
  local app=$1 why=$2; shift 2
  for other in "$@"; do
    [ ! -e "$app/node_modules/$other" ] || fail "$why pulled in $other"
  done
}

clients=(pg postgres mysql2 better-sqlite3)
drivers=(@rowclaim/postgres @rowclaim/postgres-js @rowclaim/mysql @rowclaim/sqlite)
quickstart() { # driver short name, client, dev types..., example file
  local short=$1 client=$2 example=$3; shift 3
  local app
  app=$(new_app "user-$short")
  log "user app with @rowclaim/core + @rowclaim/$short only"
  local dialect=()
  # @rowclaim/postgres-js depends on @rowclaim/postgres (its dialect and executor): a user's npm
  # fetches it from the registry, here it comes from its tarball like every rowclaim package.
  [ "$short" != postgres-js ] || dialect=("$(tarball @rowclaim/postgres)")
  npm_install "$app" "$(tarball @rowclaim/core)" "${dialect[@]}" "$(tarball "@rowclaim/$short")" "$client"
  npm_install "$app" -D "typescript@$TS" "@types/node@$NODE_TYPES" "$@"
  local others=()
  for other in "${drivers[@]}"; do
    # @rowclaim/postgres-js runs on @rowclaim/postgres (its dependency), without pg.
    [ "$other" = "@rowclaim/$short" ] || { [ "$short" = postgres-js ] && [ "$other" = @rowclaim/postgres ]; } || others+=("$other")
  done
  for other in "${clients[@]}"; do [ "$other" = "${client%@*}" ] || others+=("$other"); done
  absent "$app" "installing @rowclaim/$short" "${others[@]}"
  [ ! -e "$app/node_modules/@rowclaim/conformance" ] || fail "installing @rowclaim/$short pulled in the conformance suite"
  cp "$root/$example" "$app/example.ts"
  cp "$here/$short/main.ts" "$app/main.ts"
  cp "$here/tsconfig.user.json" "$app/tsconfig.json"
  (cd "$app" && npx tsc -p tsconfig.json) || fail "the README example does not type-check for @rowclaim/$short (strict)"
  (cd "$app" && node dist/main.js) || fail "the README example does not run for @rowclaim/$short"
}

quickstart postgres "pg@$PG" packages/postgres/test/example/usage.ts "@types/pg@$PG_TYPES"
quickstart postgres-js "postgres@$POSTGRES_JS" packages/postgres-js/test/example/usage.ts
quickstart mysql "mysql2@$MYSQL2" packages/mysql/test/readme-example.ts
quickstart sqlite "better-sqlite3@$SQLITE" packages/sqlite/test/example.ts "@types/better-sqlite3@$SQLITE_TYPES"

log "CommonJS user app (type: commonjs, TypeScript module nodenext) with @rowclaim/core + @rowclaim/postgres"
app=$(new_app user-commonjs commonjs)
npm_install "$app" "$(tarball @rowclaim/core)" "$(tarball @rowclaim/postgres)" "pg@$PG"
npm_install "$app" -D "typescript@$TS" "@types/node@$NODE_TYPES" "@types/pg@$PG_TYPES"
cp "$root/packages/postgres/test/example/usage.ts" "$app/example.ts"
cp "$here/commonjs/main.ts" "$app/main.ts"
cp "$here/tsconfig.user.json" "$app/tsconfig.json"
(cd "$app" && npx tsc -p tsconfig.json) || fail "the README example does not type-check as CommonJS"
grep -q 'require("@rowclaim/core")' "$app/dist/example.js" || fail "the CommonJS build does not require() @rowclaim/core"
(cd "$app" && node dist/main.js) || fail "the README example does not run as CommonJS (require of the ES modules, Node $(node --version))"

log "the command line for PostgreSQL only: rowclaim + @rowclaim/postgres + pg"
app=$(new_app user-cli)
npm_install "$app" -D "$(tarball rowclaim)" "$(tarball @rowclaim/core)" "$(tarball @rowclaim/postgres)" "pg@$PG"
absent "$app" "installing rowclaim for PostgreSQL" @rowclaim/mysql @rowclaim/sqlite mysql2 better-sqlite3
(cd "$app" && npx rowclaim schema --url "${ROWCLAIM_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test}" --table orders >schema.sql) ||
  fail "rowclaim schema does not run with only the PostgreSQL driver installed"
grep -q "CREATE TABLE" "$app/schema.sql" || fail "rowclaim schema printed no CREATE TABLE"
set +e
(cd "$app" && npx rowclaim schema --dialect sqlite --table orders 2>missing.txt)
status=$?
set -e
[ "$status" = 1 ] || fail "rowclaim schema --dialect sqlite without its driver exited $status, not 1"
grep -q "DRIVER_NOT_INSTALLED" "$app/missing.txt" || fail "no DRIVER_NOT_INSTALLED for a driver not installed: $(cat "$app/missing.txt")"
grep -q "npm install @rowclaim/sqlite better-sqlite3" "$app/missing.txt" || fail "DRIVER_NOT_INSTALLED does not name the install command"

log "@rowclaim/sqlite/sql without better-sqlite3 (peers left out)"
app=$(new_app user-sqlite-sql)
npm_install "$app" --legacy-peer-deps "$(tarball @rowclaim/core)" "$(tarball @rowclaim/sqlite)"
absent "$app" "installing @rowclaim/sqlite with --legacy-peer-deps" better-sqlite3
(cd "$app" && node --input-type=module -e 'const sql = await import("@rowclaim/sqlite/sql"); if (typeof sql.quoteIdentifier !== "function") process.exit(1);') ||
  fail "@rowclaim/sqlite/sql does not load without better-sqlite3"
if (cd "$app" && node --input-type=module -e 'await import("@rowclaim/sqlite")' 2>/dev/null); then
  fail "@rowclaim/sqlite loaded without better-sqlite3: the check above proves nothing"
fi

log "third-party conformance run: sub-suites of the packed suite against the packed PostgreSQL driver"
app=$(new_app user-conformance)
npm_install "$app" "$(tarball @rowclaim/core)" "$(tarball @rowclaim/postgres)" "pg@$PG"
npm_install "$app" -D "$(tarball @rowclaim/conformance)" "vitest@$VITEST" "vite@$VITE" \
  "typescript@$TS" "@types/node@$NODE_TYPES" "@types/pg@$PG_TYPES"
cp "$here"/conformance/* "$app/"
cp "$here/tsconfig.user.json" "$app/tsconfig.json"
(cd "$app" && npx tsc -p tsconfig.json --noEmit) || fail "the third-party conformance harness does not type-check"
(cd "$app" && npx vitest run --reporter=dot) || fail "the packed conformance suite failed against the packed PostgreSQL driver"

log "all good: ${#public[@]} packages packed and linted, 4 quick starts, a CommonJS project, the command line for one database, @rowclaim/sqlite/sql without its client and a third-party conformance run from the tarballs"
