#!/usr/bin/env bash
# Headless Chromium for the dashboard's browser tests: Debian's `chromium` package, installed
# with apt-get when /usr/bin/chromium is missing (idempotent: does nothing when it is there).
# playwright-core drives it through executablePath; no browser build is downloaded.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  /usr/bin/chromium --version 2>/dev/null || true
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "tooling/chromium.sh: /usr/bin/chromium is missing and installing it needs root (apt-get install chromium)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
/usr/bin/chromium --version
