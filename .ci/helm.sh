#!/usr/bin/env bash
# The Helm chart (deploy/helm/imgflow), its alerts and its queue scaling,
# checked for real. Installs what it needs on a fresh Debian machine:
# Prometheus and promtool from apt, helm built once with `go install` into
# a cache (IMGFLOW_CI_CACHE, default ~/.cache/imgflow-ci).
#
#  1. helm lint --strict and helm template (release imgflow, namespace
#     media) for each ci/*-values.yaml (default; Redis Cluster + KEDA +
#     trial upstream; S3 + KEDA over TLS; fair dispatch + KEDA on its
#     gauge through Prometheus; Sentinel + KEDA through
#     Prometheus; an operator's: Ingress, digest, queues [prod], ...);
#  2. deploy/helm/chartcheck: every rendered object decoded strictly with
#     k8s.io/api, KEDA's and the Prometheus operator's types, the chart's
#     promises checked on them, and the renders that must fail (schema
#     typos and types by name, replicas beside an autoscaler, missing
#     values) run with helm (a nested module: the root go.mod stays free of
#     Kubernetes); and the operator's render run: serve and work with the
#     rendered env against loopback stand-ins, through Redis down at start,
#     the compression API stopped and Redis frozen past work's liveness
#     window (live_test.go, about 2 minutes);
#  3. promtool check rules and promtool test rules on the alert rules as
#     the chart renders them (fire, clear, other releases' series ignored);
#  4. livealert: a real Prometheus (loopback, its own port and temp dir)
#     scraping live serve and work on their ops listeners fires the queue
#     alert when the worker stops and clears it when it returns; the queued
#     and running jobs sit on the lists the rendered ScaledObject watches; a
#     worker stopped mid-job finishes its jobs before it exits, each charged
#     once; and with Redis stopped, ImgflowRedisUnreachable fires. Its
#     processes' logs are kept ("logs in DIR") for .ci/secrets.sh.
# About 4 minutes with helm and the Go modules cached (the live alert
# waits its 60 s threshold, the live run its liveness window); 6-8 minutes
# on a fresh machine.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
started=$(date +%s)

need=()
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
if ((${#need[@]})); then
  echo "== apt-get install ${need[*]}"
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends $(printf '%s\n' "${need[@]}" | sort -u) >/dev/null
fi

HELM_VERSION=v3.22.0
cache=${IMGFLOW_CI_CACHE:-$HOME/.cache/imgflow-ci}
helm=$cache/helm-$HELM_VERSION/helm
if [ ! -x "$helm" ]; then
  echo "== go install helm.sh/helm/v3/cmd/helm@$HELM_VERSION (once, into $cache)"
  mkdir -p "$(dirname "$helm")"
  GOBIN=$(dirname "$helm") nice go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chart=deploy/helm/imgflow
kube=1.31.0 # helm built without its release ldflags assumes 1.20; the chart needs >= 1.25

ns=media # the release's namespace: the alerts and KEDA's queries are scoped to it
echo "== helm lint and helm template ($("$helm" version --short 2>/dev/null || echo "$HELM_VERSION"))"
mkdir -p "$tmp/rendered" "$tmp/rules"
for values in "$chart"/ci/*-values.yaml; do
  name=$(basename "$values" .yaml)
  "$helm" lint "$chart" --strict -f "$values" --kube-version "$kube" >"$tmp/lint.out" 2>&1 || { cat "$tmp/lint.out"; exit 1; }
  "$helm" template imgflow "$chart" -n "$ns" -f "$values" --kube-version "$kube" >"$tmp/rendered/$name.yaml"
  echo "$name: lint ok, $(grep -c '^kind:' "$tmp/rendered/$name.yaml") objects"
done
# The PrometheusRule's spec, as rendered, is the rule file promtool tests.
awk '/^kind: PrometheusRule$/{p=1} p&&/^spec:$/{s=1;next} s&&/^(  |$)/{print substr($0,3);next} s{exit}' \
  "$tmp/rendered/default-values.yaml" >"$tmp/rules/alerts.yaml"
cp deploy/prometheus/alerts_test.yaml "$tmp/rules/"

echo "== go build imgflow"
go build -o "$tmp/imgflow" .

echo "== chartcheck: strict decoding of every rendered object (k8s.io/api, KEDA, prometheus-operator)"
(cd deploy/helm/chartcheck && go vet ./... && CHART_RENDERED="$tmp/rendered" CHART_NAMESPACE="$ns" RULES_FILE="$tmp/rules/alerts.yaml" \
  HELM="$helm" IMGFLOW_BIN="$tmp/imgflow" go test -count=1 ./...)

echo "== promtool check rules / test rules"
promtool check rules "$tmp/rules/alerts.yaml"
promtool test rules "$tmp/rules/alerts_test.yaml"

echo "== livealert: real Prometheus, live serve and work, the queue alert fires and clears"
(cd deploy/helm/chartcheck && go build -o "$tmp/livealert" ./cmd/livealert)
"$tmp/livealert" -keep -imgflow "$tmp/imgflow" -rules "$tmp/rules/alerts.yaml" -namespace "$ns" \
  -scaledobject "$tmp/rendered/s3-values.yaml" -image fixtures/images/photo.jpg

echo "== helm checks passed in $(($(date +%s) - started)) s"
