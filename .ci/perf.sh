#!/usr/bin/env bash
# CI: the performance tools still run. Counts Redis commands and round trips
# per request and per job (bench_redis_test.go; exact counts, printed for
# the log) and runs the vegeta load test in its short form (2 s per row, no
# queue-depth rows) on database 13 of CI's Redis, failing if any request
# fails. About 1 minute. The full load test for BENCHMARK.md is
#   go run ./internal/loadtest -redis redis://127.0.0.1:PORT/0   (about 10 min)
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== Redis commands per job (REDIS_URL=$REDIS_URL)"
go test -run '^$' -bench 'RedisCommandsPerJob' -benchtime 20x . | grep -E '^Benchmark|ok|FAIL'
echo "== load test, short form"
go run ./internal/loadtest -redis "${REDIS_URL%/*}/13" -quick -fill ""
