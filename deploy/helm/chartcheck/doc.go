// Package chartcheck holds the checks of the Helm chart in ../imgflow that
// need Kubernetes' own types: every object `helm template` renders is
// decoded strictly (an unknown or misspelt field fails) with k8s.io/api,
// KEDA's and the Prometheus operator's types, and what the chart promises
// is checked on the decoded objects (the worker's grace period against the
// job deadline in worker/queue.go, the ScaledObject's list against the
// queue, no secret in a ConfigMap, every variable known to the command).
//
// It is a module of its own so that the main module's go.mod stays free of
// Kubernetes; `go test ./...` at the root skips it. Run by .ci/helm.sh,
// which renders the chart for each ci/*-values.yaml into a directory:
//
//	CHART_RENDERED=/tmp/rendered IMGFLOW_BIN=/path/to/imgflow go test ./...
package chartcheck
