#!/usr/bin/env bash
# CI: a short run of every fuzz target (go test -fuzz), FUZZTIME inputs
# each (default 100000x; the slow ones fewer, below), one at a time. Their seed corpora (f.Add, and any
# testdata/fuzz/ inputs a past run found) already run in go test ./...;
# this explores past them.
#
# The budget is a count, not a duration: Go 1.26's fuzz coordinator can
# report a bare "context deadline exceeded" failure when a -fuzztime
# duration runs out while a worker is mid-input (go.dev/issue/75804, fixed
# in Go 1.27); a count has no deadline to race.
#
#   FUZZTIME=3000000x bash .ci/fuzz.sh  # the long profile (FUZZPARALLEL=N workers, default 2)
#   bash .ci/fuzz.sh ./connector/guard  # one package
#
# A failing input is written to the package's testdata/fuzz/<Target>/:
# commit it with the fix, and it stays a regression test.
set -euo pipefail
cd "$(dirname "$0")/.."
# Targets that drive the whole in-process API per input run a few hundred
# inputs a second (FuzzBase64RoundTrip: ~190/s, 100000 took 12 min): they
# get fewer. Minimising a new corpus entry is bounded by a count too.
declare -A short_budget=([FuzzBase64RoundTrip]=15000x)
pkgs=("$@")
if [ ${#pkgs[@]} -eq 0 ]; then
  mapfile -t pkgs < <(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u)
fi
n=0
for pkg in "${pkgs[@]}"; do
  for target in $(grep -h '^func Fuzz' "$pkg"/*_test.go | sed 's/^func \(Fuzz[A-Za-z0-9_]*\).*/\1/'); do
    # REDIS_URL unset: the targets use the embedded miniredis. Fuzz workers
    # are stopped, not finished, so their test cleanup never runs and would
    # leave every fuzzed job in a real Redis.
    fuzztime="${FUZZTIME:-${short_budget[$target]:-100000x}}"
    if ! out="$(env -u REDIS_URL go test -timeout 30m -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime 100x -parallel "${FUZZPARALLEL:-2}" "$pkg" 2>&1)"; then
      echo "FAIL fuzz $pkg $target:"
      echo "$out" | grep -v '^fuzz: elapsed' || true
      exit 1
    fi
    echo "PASS fuzz $pkg $target ($fuzztime): $(grep '^fuzz: elapsed' <<<"$out" | tail -n1 | sed 's/^fuzz: //')"
    n=$((n + 1))
  done
done
echo "fuzz: $n targets ran their budgets without a failure"
