#!/usr/bin/env bash
# CI: the performance tools still run. Counts Redis commands and round trips
# per request and per job (bench_redis_test.go; printed for the log and held
# to ceilings, so a path that costs more fails) and runs the vegeta load test in its short form (2 s per row, no
# queue-depth rows) on database 13 of CI's Redis, failing if any request
# fails. About 1 minute. The full load test for BENCHMARK.md is
#   go run ./internal/loadtest -redis redis://127.0.0.1:PORT/0   (about 10 min)
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== Redis commands per job (REDIS_URL=$REDIS_URL)"
counts=$(go test -run '^$' -bench 'RedisCommandsPerJob' -benchtime 100x . | grep -E '^Benchmark|ok|FAIL')
echo "$counts"
# Ceilings per path: client round trips and Redis commands per op, as
# measured (BENCHMARK.md, "Redis commands per job and per request")
# plus half a round trip and a command and a half of slack for the
# run-to-run spread of 100 ops (a reconnect, asynq's start-up and
# housekeeping in "work" and "POST-wait"). A round trip or two commands
# more per op on any path fails. Lower them when a cut lands. A "trip" is
# one wait for Redis: on the autopipeliner (redisstore.Batched) the calls
# of concurrent jobs share writes, so under load Redis reads far fewer
# batches per job than this (BENCHMARK.md: 3.1 per ?wait job).
echo "$counts" | awk '
  BEGIN {
    trips["POST"] = 3.5;  cmds["POST"] = 11.6
    trips["POST-idempotency-key"] = 6.5;  cmds["POST-idempotency-key"] = 17.6
    trips["work"] = 3.7;  cmds["work"] = 34.0
    trips["GET"] = 1.5;  cmds["GET"] = 2.5
    trips["GET-file"] = 2.5;  cmds["GET-file"] = 5.5
    trips["POST-wait"] = 6.5;  cmds["POST-wait"] = 46.6
    # Fair dispatch (IMGFLOW_DISPATCH=fair): the making, the enqueue and
    # its wake-up are one script (redisstore/makequeued.go); the dispatch and end of a worker go on its own client
    # (counted in commands, not in trips). "defaults": the shipped key cap
    # and free-failure budget on, which a POST checks in its create script.
    trips["POST-fair"] = 1.5;  cmds["POST-fair"] = 8.6
    trips["work-fair"] = 3.5;  cmds["work-fair"] = 26.2
    trips["POST-wait-fair"] = 4.5;  cmds["POST-wait-fair"] = 33.6
    trips["POST-wait-fair-defaults"] = 4.5;  cmds["POST-wait-fair-defaults"] = 38.6
    # Content dedupe on: a new image looks the index up and claims it,
    # then records itself (+2 trips); a repeat completes from an earlier result.
    trips["work-dedupe-new"] = 5.5;  cmds["work-dedupe-new"] = 37.0
    trips["POST-wait-dedupe-new"] = 8.5;  cmds["POST-wait-dedupe-new"] = 49.5
    trips["POST-wait-dedupe-repeat"] = 11.5;  cmds["POST-wait-dedupe-repeat"] = 54.6
    # Every shipped default with the reference compression API (its ledger) on
    # the same Redis: the whole job as a harness of the real processes counts it
    # (the ledger keeps the answer with a plain SET before its charge: a trip more).
    trips["POST-wait-shipped"] = 9.5;  cmds["POST-wait-shipped"] = 48.6
  }
  /^BenchmarkRedisCommandsPerJob\// {
    path = $1; sub(/^BenchmarkRedisCommandsPerJob\//, "", path); sub(/-[0-9]+$/, "", path)
    t = c = -1
    for (i = 3; i < NF; i++) {
      if ($(i+1) == "client-trips/op") t = $i
      if ($(i+1) == "redis-cmds/op") c = $i
    }
    seen[path] = 1
    if (!(path in trips)) { print "perf: no ceiling for path " path; bad = 1; next }
    if (t > trips[path] + 0.001) { printf "perf: %s costs %.2f round trips, ceiling %s\n", path, t, trips[path]; bad = 1 }
    if (c > cmds[path] + 0.001) { printf "perf: %s costs %.2f Redis commands, ceiling %s\n", path, c, cmds[path]; bad = 1 }
  }
  END {
    for (p in trips) if (!(p in seen)) { print "perf: path " p " was not measured"; bad = 1 }
    if (bad) exit 1
    print "perf: every path within its Redis ceilings"
  }'
echo "== one-key flood on fair dispatch, short form (fails if a compress task is parked)"
FLOOD_JOBS=60 go test -run '^$' -bench 'OneKeyFlood/fair' -benchtime 1x . | grep -E '^Benchmark|ok|FAIL'
echo "== load test, short form"
go run ./internal/loadtest -redis "${REDIS_URL%/*}/13" -quick -fill ""
