#!/usr/bin/env bash
# staticcheck over the whole module, pinned: any finding fails the run.
# The Go module proxy serves it; the first run downloads and builds it
# (about a minute), later runs use Go's caches.
set -euo pipefail
cd "$(dirname "$0")/.."
STATICCHECK_VERSION=${STATICCHECK_VERSION:-v0.8.2}
echo "== staticcheck ./...  (honnef.co/go/tools $STATICCHECK_VERSION)"
go run "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION" ./...
