#!/usr/bin/env bash
# The fault suite's short profile (internal/faults), twice: against the
# reference upstream honouring Idempotency-Key (any extra credit fails the
# run) and ignoring it (extra credits only on jobs marked charge_uncertain).
# Each: 200 jobs and four 200-item batches through real redis-server,
# upstream (20 % failures, 300 ms latency), serve and two workers, with a
# worker SIGKILL mid-call, a Redis restart and a Redis crash (appendfsync
# always: a crash may lose nothing acknowledged) and a serve SIGKILL while a
# batch is being made. About 1-2 min each.
# Then the upgrade profile once: 500 jobs while serve and each worker are
# replaced with SIGTERM one at a time (a rolling upgrade), against the
# upstream ignoring Idempotency-Key: no job may be lost, charge_uncertain
# or charged twice. About 1-2 min.
# The long profile (the strict matrix): go run ./internal/faults -profile long -appendfsync always
set -euo pipefail
command -v redis-server >/dev/null || { echo "redis-server is required"; exit 1; }
for idempotency in true false; do
  echo "== fault suite (short profile, upstream idempotency $idempotency)"
  start=$(date +%s)
  go run ./internal/faults -keep -profile short -appendfsync always -upstream-idempotency=$idempotency 2>&1 | grep -v 'pool.go:.*failed to dial'
  echo "== fault suite took $(( $(date +%s) - start ))s"
done
echo "== fault suite (upgrade profile: a rolling upgrade under load, upstream idempotency false)"
start=$(date +%s)
go run ./internal/faults -keep -profile upgrade -appendfsync always -upstream-idempotency=false 2>&1 | grep -v 'pool.go:.*failed to dial'
echo "== fault suite took $(( $(date +%s) - start ))s"
