#!/usr/bin/env bash
# CI part of the MCP server (mcp/) and its OAuth front (oauth/): the official
# MCP TypeScript SDK's client (npm @modelcontextprotocol/sdk, pinned in
# .ci/mcp/package.json) lists and calls every tool of a live `imgflow dev` on
# loopback (embedded Redis), as an agent would (mcp.test.mjs), and runs the
# SDK's OAuth flow with the consent page filled in Debian's chromium through
# playwright-core (oauth.test.mjs). Installs chromium when missing and its npm
# deps into .ci/mcp; starts dev on free ports and stops it. About a minute
# (see the last line).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
if ! command -v chromium >/dev/null 2>&1; then
  echo "== apt-get install chromium"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
echo "== MCP client tests (TypeScript SDK)"
(cd .ci/mcp && npm ci --no-audit --no-fund --loglevel=error)
free_port() { node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })'; }
api_port=$(free_port)
up_port=$(free_port)
key="mcp-ci-$(date +%s)-$RANDOM"
log="$(mktemp)"
REDIS_URL= IMGFLOW_DEMO_KEY="$key" go run . dev --addr "127.0.0.1:$api_port" --upstream-addr "127.0.0.1:$up_port" >"$log" 2>&1 &
dev=$!
stop() {
  kill "$dev" 2>/dev/null || true
  wait "$dev" 2>/dev/null || true
  rm -f "$log"
}
trap stop EXIT
healthy() { node -e 'fetch(process.argv[1]).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))' "http://127.0.0.1:$api_port/health"; }
for _ in $(seq 1 120); do
  if healthy; then break; fi
  if ! kill -0 "$dev" 2>/dev/null; then cat "$log"; echo "imgflow dev did not start"; exit 1; fi
  sleep 0.5
done
healthy || { cat "$log"; echo "imgflow dev did not answer /health"; exit 1; }
(cd .ci/mcp && IMGFLOW_URL="http://127.0.0.1:$api_port" IMGFLOW_KEY="$key" node --test --test-concurrency=1 ./*.test.mjs) || { tail -50 "$log"; exit 1; }
echo "== MCP client tests took $(($(date +%s) - start)) s"
