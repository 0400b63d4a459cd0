#!/usr/bin/env bash
# CI: every transform test runs for real. The transform tests
# skip on a machine without libvips (loaded at run time with dlopen, so
# imgflow builds and runs without it); .ci/run installs libvips42, and this
# fails the run if the library is missing or any transform test skipped.
# Installs nothing. About 15 s.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! ldconfig -p 2>/dev/null | grep 'libvips\.so\.42' >/dev/null; then  # no -q: an early exit would SIGPIPE ldconfig under pipefail
  echo "FAIL: libvips (libvips.so.42) is not installed: apt-get install libvips42"
  exit 1
fi
out="$(go test -count=1 -v ./connector/imaging/ 2>&1 && \
       go test -count=1 -v -run 'Transform|Preserve|HEIC|Libvips' ./worker/ 2>&1 && \
       go test -count=1 -v -run 'CompressCommandResizes|TwoInputsSharing|InPlaceNever|WhatIsAsked' ./internal/compresscli/ 2>&1)" || { echo "$out"; exit 1; }
skips="$(grep -A1 -- '--- SKIP' <<<"$out" || true)"
if [ -n "$skips" ]; then
  echo "FAIL: transform tests skipped:"
  echo "$skips"
  exit 1
fi
if ! grep -q -- '--- PASS: TestWithoutLibvipsTransformsAre422AndPlainJobsWork' <<<"$out"; then
  echo "FAIL: the transforms-off test did not run"
  exit 1
fi
echo "transform tests: none skipped ($(grep -c -- '--- PASS' <<<"$out") passed)"
