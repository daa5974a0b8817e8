#!/usr/bin/env bash
# Installs what the browser tests (web-tests/) need on a fresh Debian machine: Chromium
# from apt and playwright-core from npm (pinned by web-tests/package-lock.json). Idempotent:
# apt-get update runs only when Chromium is missing, npm ci only when node_modules does
# not match the lock file. Playwright's own browser download is never used.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)

if ! command -v chromium >/dev/null 2>&1 && [ ! -x /usr/bin/chromium ]; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo=sudo; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
fi
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo=sudo; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq nodejs npm >/dev/null
fi

cd "$root/web-tests"
# npm ci wipes and reinstalls; skip it when the installed tree already matches the lock.
if ! cmp -s package-lock.json node_modules/.package-lock.json.ci 2>/dev/null; then
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error
  cp package-lock.json node_modules/.package-lock.json.ci
fi
