#!/usr/bin/env bash
# CI: no AVIF test may skip. The AVIF tests skip on a machine without
# libavif (runtime) or avif.h (libavif-dev, for the layout test); .ci/run
# installs both, and this fails the run if a skip slipped through anyway.
# About 10 s.
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(go test -count=1 -v ./fixtures/upstream/... 2>&1)" || { echo "$out"; exit 1; }
skips="$(grep -A1 -- '--- SKIP' <<<"$out" | grep -i 'avif' || true)"
if [ -n "$skips" ]; then
  echo "FAIL: AVIF tests skipped:"
  echo "$skips"
  exit 1
fi
echo "AVIF tests: none skipped ($(grep -c -- '--- PASS.*AVIF\|--- PASS.*avif' <<<"$out") passed by name)"
