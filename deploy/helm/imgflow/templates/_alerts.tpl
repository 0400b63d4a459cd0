{{/*
imgflow's alert rules, the spec of the chart's PrometheusRule (groups:).
.ci/helm.sh renders them and runs `promtool check rules` and `promtool test
rules` (deploy/prometheus/alerts_test.yaml) on the rendered file, and loads
them into a real Prometheus scraping a live imgflow (chartcheck's
livealert). Every selector carries seriesSelector (this release's namespace
and ops Services), every runbook_url is prometheusRule.runbookURL plus the
alert's anchor in docs/operations.md, "Alerts". Queue gauges come from
every serve pod alike: max(), never sum(). Prometheus's own templates are
escaped as Helm raw strings (backquotes).
*/}}
{{- define "imgflow.alertRules" -}}
{{- $sel := include "imgflow.seriesSelector" . -}}
{{- $runbook := .Values.prometheusRule.runbookURL -}}
{{- /* Failure codes that are the system's (dead letters), not the caller's. */ -}}
{{- $system := "upstream_error|unavailable|internal|upstream_unavailable" }}
groups:
  - name: imgflow
    rules:
      - alert: ImgflowQueueBackingUp
        # The oldest pending task has waited over a minute: no worker is
        # taking tasks, or too few for the load (pickup is milliseconds).
        expr: max by (queue) (imgflow_queue_latency_seconds{ {{- $sel -}} }) > 60
        for: 5m
        labels:
          severity: critical
        annotations:
          summary: "imgflow queue {{`{{ $labels.queue }}`}}: oldest pending task waited {{`{{ $value | humanizeDuration }}`}}"
          description: "Workers are not keeping up or not running. Check the work pods and KEDA; see the runbook."
          runbook_url: "{{ $runbook }}#imgflowqueuebackingup"

      - alert: ImgflowJobsFailing
        # Failures that are the system's, not the caller's (bad input, no
        # credits, unreachable image URLs are the caller's).
        expr: |
          sum(rate(imgflow_jobs_failed_total{code=~{{ $system | quote }},{{ $sel }}}[10m]))
            /
          clamp_min(sum(rate(imgflow_jobs_completed_total{ {{- $sel -}} }[10m])) + sum(rate(imgflow_jobs_failed_total{ {{- $sel -}} }[10m])), 1e-9)
            > 0.1
        for: 10m
        labels:
          severity: critical
        annotations:
          summary: "imgflow: {{`{{ $value | humanizePercentage }}`}} of jobs fail for the system's reasons"
          runbook_url: "{{ $runbook }}#imgflowjobsfailing"

      - alert: ImgflowUpstreamErrors
        expr: |
          sum(rate(imgflow_upstream_requests_total{endpoint="compress",status=~"5..|error",{{ $sel }}}[5m]))
            /
          clamp_min(sum(rate(imgflow_upstream_requests_total{endpoint="compress",{{ $sel }}}[5m])), 1e-9)
            > 0.05
        for: 10m
        labels:
          severity: warning
        annotations:
          summary: "imgflow: {{`{{ $value | humanizePercentage }}`}} of compression API calls fail (5xx or no answer)"
          runbook_url: "{{ $runbook }}#imgflowupstreamerrors"

      - alert: ImgflowUpstreamSlow
        expr: |
          histogram_quantile(0.95, sum by (le) (rate(imgflow_upstream_request_duration_seconds_bucket{endpoint="compress",{{ $sel }}}[10m])))
            > 10
        for: 15m
        labels:
          severity: warning
        annotations:
          summary: "imgflow: compression API p95 is {{`{{ $value | humanizeDuration }}`}}"
          runbook_url: "{{ $runbook }}#imgflowupstreamslow"

      - alert: ImgflowDeliveriesFailing
        # Attempts that did not reach the receiver (retry: will try again;
        # failed: the last attempt) over every attempt that went out.
        expr: |
          sum(rate(imgflow_deliveries_total{outcome=~"retry|failed",{{ $sel }}}[15m]))
            /
          clamp_min(sum(rate(imgflow_deliveries_total{outcome=~"delivered|retry|failed|gone",{{ $sel }}}[15m])), 1e-9)
            > 0.25
        for: 30m
        labels:
          severity: warning
        annotations:
          summary: "imgflow: {{`{{ $value | humanizePercentage }}`}} of callback and hook deliveries fail"
          runbook_url: "{{ $runbook }}#imgflowdeliveriesfailing"

      - alert: ImgflowWebhookEndpointsDisabled
        # A hook or callback URL failed every attempt for
        # IMGFLOW_HOOK_DISABLE_AFTER and was disabled (410s are the
        # receiver's own choice and not counted).
        expr: sum by (kind) (increase(imgflow_webhook_endpoints_disabled_total{reason="failing",{{ $sel }}}[1h])) > 0
        labels:
          severity: info
        annotations:
          summary: "imgflow: {{`{{ $value }}`}} {{`{{ $labels.kind }}`}} endpoint(s) disabled for failing in the last hour"
          runbook_url: "{{ $runbook }}#imgflowwebhookendpointsdisabled"

      - alert: ImgflowRedisUnreachable
        expr: imgflow_redis_up{ {{- $sel -}} } == 0
        for: 1m
        labels:
          severity: critical
        annotations:
          summary: "imgflow serve {{`{{ $labels.instance }}`}} cannot reach Redis"
          runbook_url: "{{ $runbook }}#imgflowredisunreachable"

      - alert: ImgflowDeadLetterGrowth
        # Jobs that failed for the system's reasons, which are what asynq
        # archives after the last retry (dead letters; a caller's mistake
        # fails its job without leaving a task). Counted from the failures
        # themselves, not the archive's size, which asynq caps (10,000).
        expr: sum(increase(imgflow_jobs_failed_total{code=~{{ $system | quote }},{{ $sel }}}[1h])) > 10
        labels:
          severity: warning
        annotations:
          summary: "imgflow: {{`{{ $value | printf \"%.0f\" }}`}} jobs failed for the system's reasons (dead letters) in the last hour"
          runbook_url: "{{ $runbook }}#imgflowdeadlettergrowth"

      - alert: ImgflowChargeUncertain
        # A job was compressed again after a call that never got an answer:
        # possibly a credit charged twice (an upstream that ignores
        # Idempotency-Key).
        expr: sum(increase(imgflow_upstream_charge_uncertain_total{ {{- $sel -}} }[1h])) > 0
        labels:
          severity: info
        annotations:
          summary: "imgflow: {{`{{ $value }}`}} job(s) may have been charged twice in the last hour"
          runbook_url: "{{ $runbook }}#imgflowchargeuncertain"
{{- end -}}
