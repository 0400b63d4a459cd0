#!/usr/bin/env bash
# The fault suite's short profile (internal/faults): about 200 jobs through
# real redis-server, upstream (20 % failures), serve and two workers, with a
# worker SIGKILL, a Redis restart and a serve SIGKILL. About 1 min.
# The long profile: go run ./internal/faults -profile long
set -euo pipefail
echo "== fault suite (short profile)"
command -v redis-server >/dev/null || { echo "redis-server is required"; exit 1; }
start=$(date +%s)
go run ./internal/faults -profile short 2>&1 | grep -v 'pool.go:.*failed to dial'
echo "== fault suite took $(( $(date +%s) - start ))s"
