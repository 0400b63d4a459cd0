#!/usr/bin/env bash
# Validates the committed connector definitions with each platform's own
# tooling, then proves every validator can fail: a deliberately broken copy
# of each platform's files must be rejected, for the expected reason.
# Finally runs the generated Zapier app for real against imgflow
# (zapier-run.js; skipped with a message when no server can be started).
#
#   bash definitions/check.sh        (from the repo root, or anywhere)
#
# Environment: IMGFLOW_SCHEMAS (default: checks/schemas, the platforms'
# schemas vendored beside the checks, see checks/schemas/README.md),
# IMGFLOW_URL + IMGFLOW_KEY (an existing server for the client run),
# IMGFLOW_SKIP_RUN=1 to skip the client run.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$here"

schemas="${IMGFLOW_SCHEMAS:-$here/checks/schemas}"
if [ ! -d "$schemas/make" ] || [ ! -d "$schemas/powerautomate" ]; then
  echo "FAIL schemas: no make/ and powerautomate/ schemas in $schemas"
  exit 1
fi

echo "== npm ci (definitions/)"
if ! npm ci --no-audit --no-fund --loglevel=error; then
  echo "FAIL npm ci"
  exit 1
fi

failures=0
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

echo "== validators on the committed files"
for platform in zapier n8n make powerautomate openapi; do
  if out="$(node checks/run.js "$platform" "$platform" "$schemas" 2>&1)"; then
    echo "PASS $platform: valid"
  else
    echo "FAIL $platform: rejected the committed files"
    echo "$out"
    failures=$((failures + 1))
  fi
done

echo "== broken copies must be rejected"
for case in $(node checks/break.js list); do
  platform="${case%%-*}"
  if ! expect="$(node checks/break.js "$case" "$platform" "$tmp/$case")"; then
    echo "FAIL $case: could not make the broken copy"
    failures=$((failures + 1))
    continue
  fi
  if out="$(node checks/run.js "$platform" "$tmp/$case" "$schemas" 2>&1)"; then
    echo "FAIL $case: the $platform validator accepted a broken copy"
    failures=$((failures + 1))
  elif ! grep -qF -- "$expect" <<<"$out"; then
    echo "FAIL $case: rejected, but not for the expected reason ($expect):"
    echo "$out"
    failures=$((failures + 1))
  else
    echo "PASS $case: rejected ($(grep -F -m1 -- "$expect" <<<"$out" | sed 's/^ *- //' | cut -c1-120))"
  fi
done

echo "== Zapier app run for real against imgflow"
if [ "${IMGFLOW_SKIP_RUN:-}" = "1" ]; then
  echo "SKIP zapier-run: IMGFLOW_SKIP_RUN=1"
else
  node zapier-run.js "$root"
  rc=$?
  if [ $rc -eq 0 ]; then
    echo "PASS zapier-run"
  elif [ $rc -eq 3 ]; then
    echo "SKIP zapier-run: no imgflow server (see above)"
  else
    echo "FAIL zapier-run"
    failures=$((failures + 1))
  fi
fi

if [ $failures -gt 0 ]; then
  echo "definitions check: $failures failure(s)"
  exit 1
fi
echo "definitions check: all passed"
