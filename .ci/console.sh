#!/usr/bin/env bash
# CI part of the web console (server/console): its browser tests, with
# Debian's chromium driven by playwright-core against a live `imgflow dev`
# on loopback (embedded Redis). Installs chromium when missing; never
# downloads a browser of its own. About a minute (see the last line).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
if ! command -v chromium >/dev/null 2>&1; then
  echo "== apt-get install chromium"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
echo "== console browser tests ($(chromium --version 2>/dev/null || echo chromium))"
(cd server/console/e2e && npm ci --no-audit --no-fund --loglevel=error)
bin="$(mktemp -d)/imgflow"
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" .
(cd server/console/e2e && IMGFLOW_BIN="$bin" node --test --test-concurrency=1 ./*.test.js)
echo "== console browser tests took $(($(date +%s) - start)) s"
