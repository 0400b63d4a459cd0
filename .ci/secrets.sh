#!/usr/bin/env bash
# The whole CI run's output ($CI_LOG, which .ci/run tees everything into)
# must hold none of the fixed secrets CI's own processes run with: the fault
# suite's and the chart stack's IMGFLOW_SECRET (read from their sources, so
# they stay in step). Go tests check their random secrets themselves
# (secrets_run_test.go, internal/system/secrets_test.go; the chart stack's
# API key in its Stop). The fault suite (.ci/faults.sh) and the chart's live
# stack (.ci/helm.sh, livealert) run with -keep and print "(logs in DIR)":
# every process's log there is searched too, then DIR is removed. A hit
# names the secret's kind and where, never the secret.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${CI_LOG:?CI_LOG is not set: .ci/run tees its output into it}"
echo "== secrets: none of CI's secrets in the run's output ($CI_LOG)"

fixed() { # kind, file, sed expression printing the secret
  local value
  value=$(sed -n "$3" "$2")
  if [ -z "$value" ]; then
    echo "secrets.sh: no $1 found in $2: update .ci/secrets.sh to the code"
    exit 1
  fi
  kinds+=("$1")
  values+=("$value")
}
kinds=()
values=()
fixed "the fault suite's IMGFLOW_SECRET" internal/faults/procs.go 's/.*"IMGFLOW_SECRET=\([^"]*\)".*/\1/p'
fixed "the chart stack's IMGFLOW_SECRET" deploy/helm/chartcheck/internal/stack/stack.go 's/^const secret = "\([^"]*\)".*/\1/p'

files=("$CI_LOG")
dirs=()
while IFS= read -r d; do
  case "$(basename "$d")" in imgflow-faults-* | imgflow-stack-*) ;; *) continue ;; esac
  [ -d "$d" ] || continue
  dirs+=("$d")
  for f in "$d"/*.log; do [ -f "$f" ] && files+=("$f"); done
done < <(sed -n 's/.*(logs in \(\/[^)]*\))$/\1/p' "$CI_LOG" | sort -u)

failed=0
# A stage that ran must have left its logs: a changed "logs in" line would
# otherwise drop them from the search unseen.
for stage in "faults: profile |imgflow-faults-" "== livealert|imgflow-stack-"; do
  if grep -qF -- "${stage%%|*}" "$CI_LOG" && ! printf '%s\n' "${dirs[@]}" | grep -qF "/${stage##*|}"; then
    echo "FAIL: \"${stage%%|*}\" ran but left no ${stage##*|}DIR to search (its \"logs in DIR\" line?)"
    failed=1
  fi
done
for i in "${!kinds[@]}"; do
  for f in "${files[@]}"; do
    lines=$(grep -naF -- "${values[$i]}" "$f" | cut -d: -f1 | head -5 | paste -sd, - || true)
    if [ -n "$lines" ]; then
      echo "FAIL: ${kinds[$i]} is in $f (lines $lines)"
      failed=1
    fi
  done
done
((${#dirs[@]})) && rm -rf "${dirs[@]}"
[ "$failed" = 0 ] && echo "   ok: ${#kinds[@]} secrets, ${#files[@]} files (the run's output, the fault suite's and the live stack's process logs)"
exit "$failed"
