#!/usr/bin/env bash
# CI: the bounds of one request, against a whole `imgflow dev` process (the
# built binary, its embedded Redis and reference upstream, loopback only):
# metadata bombs, an enlargement, 49 MP and the largest AVIF, MCP's
# repeated uploads and batches, trickling connections, strict fields and
# filenames. Each case's peak resident set (VmHWM) is printed and held to
# the budgets of docs/capacity.md; the test fails if it skipped. About 3
# minutes (a 35.6 MP AVIF encoded twice).
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== bounds of a dev process (go test -tags bounds)"
out="$(go test -tags bounds -run TestBoundsOfADevProcess -count=1 -v . 2>&1)" || { echo "$out"; exit 1; }
grep -E 'BOUNDS|^(ok|---)' <<<"$out"
if grep -q -- '--- SKIP' <<<"$out"; then
  echo "FAIL: the bounds test skipped:"
  grep -A1 -- '--- SKIP' <<<"$out"
  exit 1
fi
