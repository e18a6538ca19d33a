# Sourced by tooling/run.sh and .ci/run. better-sqlite3 compiles from source where no prebuilt
# binary can be downloaded, and node-gyp then downloads Node's headers, which fails offline or
# behind a registry-only proxy. Node installs (Debian's, the official tarballs, nvm) ship their
# headers in <prefix>/include/node: when those match the running Node, point node-gyp at them
# (npm_config_nodedir; pnpm reads it only from the environment). Elsewhere nothing is set, and a
# prebuilt binary or node-gyp's own download is used as usual. A caller's own setting wins.
if [ -z "${npm_config_nodedir:-}" ]; then
  __rowclaim_prefix=$(node -p 'require("node:path").resolve(process.execPath, "..", "..")' 2>/dev/null || true)
  if [ -n "$__rowclaim_prefix" ] && [ -f "$__rowclaim_prefix/include/node/node_version.h" ]; then
    __rowclaim_headers=$(awk '/define NODE_(MAJOR|MINOR|PATCH)_VERSION/ { printf "%s.", $3 }' \
      "$__rowclaim_prefix/include/node/node_version.h")
    if [ "v${__rowclaim_headers%.}" = "$(node -p process.version)" ]; then
      export npm_config_nodedir="$__rowclaim_prefix"
    fi
  fi
  unset __rowclaim_prefix __rowclaim_headers
fi
