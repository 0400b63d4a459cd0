# Sourced by .ci/run: gives CI a Redis of its own, so that it never shares
# (or leaves keys in) a Redis someone else uses. Unless REDIS_URL is already
# set, it starts redis-server on a free loopback port, in memory only, and
# exports REDIS_URL on database 12 (not 0: a path that ignored the database
# number would show up as keys in db 0). At exit it reports any key left in
# any database of that server, failing the run if there is one, and stops it.
ci_redis_dir="$(mktemp -d)"
ci_redis_port=""
if [ -z "${REDIS_URL:-}" ]; then
  for p in $(seq 16379 16479); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then ci_redis_port=$p; break; fi
  done
  [ -n "$ci_redis_port" ] || { echo "no free port for CI's redis-server"; exit 1; }
  echo "== redis-server of its own on 127.0.0.1:$ci_redis_port"
  redis-server --daemonize yes --bind 127.0.0.1 --port "$ci_redis_port" --save "" --appendonly no \
    --dir "$ci_redis_dir" --pidfile "$ci_redis_dir/redis.pid" --logfile "$ci_redis_dir/redis.log"
  for _ in $(seq 50); do redis-cli -p "$ci_redis_port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  export REDIS_URL="redis://127.0.0.1:$ci_redis_port/12"
fi

ci_redis_stop() {
  local rc=$?
  set +e # report and stop the server whatever fails here
  if [ -n "$ci_redis_port" ]; then
    local left
    left="$(redis-cli -p "$ci_redis_port" info keyspace | grep '^db' || true)"
    if [ -n "$left" ]; then
      echo "== FAIL: keys left in CI's Redis after the run:"
      echo "$left"
      for db in $(sed 's/^db\([0-9]*\):.*/\1/' <<<"$left"); do
        redis-cli -p "$ci_redis_port" -n "$db" --scan | head -20 | sed "s/^/  db$db /"
      done
      [ "$rc" -ne 0 ] || rc=1
    else
      echo "== CI's Redis is empty after the run"
    fi
    redis-cli -p "$ci_redis_port" shutdown nosave >/dev/null 2>&1 || kill "$(cat "$ci_redis_dir/redis.pid")" 2>/dev/null
  fi
  rm -rf "$ci_redis_dir"
  exit "$rc"
}
trap ci_redis_stop EXIT
