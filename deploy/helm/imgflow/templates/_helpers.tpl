{{/* Names, labels and the shared pieces of serve's and work's pod specs. */}}

{{- define "imgflow.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "imgflow.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "imgflow.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "imgflow.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* selector labels of one component: (dict "root" $ "component" "serve") */}}
{{- define "imgflow.selector" -}}
app.kubernetes.io/name: {{ include "imgflow.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "imgflow.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "imgflow.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "imgflow.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* The Secret holding what the chart was given in values. */}}
{{- define "imgflow.secretName" -}}
{{ include "imgflow.fullname" . }}
{{- end -}}

{{- define "imgflow.upstreamURL" -}}
{{- if .Values.upstreamURL -}}
{{ .Values.upstreamURL }}
{{- else if .Values.upstream.enabled -}}
http://{{ include "imgflow.fullname" . }}-upstream:{{ .Values.upstream.port }}/api
{{- end -}}
{{- end -}}

{{/* IMGFLOW_BLOB_STORE from blobStore. */}}
{{- define "imgflow.blobStore" -}}
{{- if eq .Values.blobStore.type "s3" -}}
{{- $s3 := .Values.blobStore.s3 -}}
{{- $q := list (printf "region=%s" (urlquery $s3.region)) -}}
{{- if $s3.endpoint }}{{ $q = append $q (printf "endpoint=%s" (urlquery $s3.endpoint)) }}{{ end -}}
{{- if $s3.pathStyle }}{{ $q = append $q "path_style=true" }}{{ end -}}
s3://{{ $s3.bucket }}{{ if $s3.path }}/{{ trimAll "/" $s3.path }}{{ end }}?{{ join "&" $q }}
{{- else -}}
redis
{{- end -}}
{{- end -}}

{{/* Fails rendering with the variable's name when a required value is missing. */}}
{{- define "imgflow.validate" -}}
{{- if not .Values.publicURL -}}
{{- fail "publicURL (IMGFLOW_PUBLIC_URL) is required: the URL flows reach the API at, e.g. https://imgflow.example.com" -}}
{{- end -}}
{{- if not (include "imgflow.upstreamURL" .) -}}
{{- fail "upstreamURL (UPSTREAM_URL) is required, or set upstream.enabled=true for the reference upstream" -}}
{{- end -}}
{{- if and (not .Values.secret.existingSecret) (lt (len .Values.secret.value) 16) -}}
{{- fail "secret.value (IMGFLOW_SECRET, at least 16 characters) or secret.existingSecret is required" -}}
{{- end -}}
{{- if and (not .Values.redis.existingSecret) (not .Values.redis.url) -}}
{{- fail "redis.url (REDIS_URL) or redis.existingSecret is required" -}}
{{- end -}}
{{- if not (has .Values.blobStore.type (list "redis" "s3")) -}}
{{- fail "blobStore.type must be redis or s3" -}}
{{- end -}}
{{- if eq .Values.blobStore.type "s3" -}}
{{- if not .Values.blobStore.s3.bucket -}}
{{- fail "blobStore.s3.bucket is required with blobStore.type=s3" -}}
{{- end -}}
{{- if and (not .Values.blobStore.s3.existingSecret) (or (not .Values.blobStore.s3.accessKeyId) (not .Values.blobStore.s3.secretAccessKey)) -}}
{{- fail "blobStore.s3.accessKeyId and secretAccessKey (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), or blobStore.s3.existingSecret, are required with blobStore.type=s3" -}}
{{- end -}}
{{- else if .Values.blobStore.presign -}}
{{- fail "blobStore.presign (IMGFLOW_PRESIGN) needs blobStore.type=s3" -}}
{{- end -}}
{{- if lt (int .Values.work.terminationGracePeriodSeconds) 120 -}}
{{- fail "work.terminationGracePeriodSeconds must be at least 120: the job deadline (worker/queue.go compressTimeout, 2m)" -}}
{{- end -}}
{{- if not .Values.queues -}}
{{- fail "queues needs at least one name (the first is IMGFLOW_QUEUE)" -}}
{{- end -}}
{{- if .Values.work.keda.enabled -}}
{{- $kr := include "imgflow.kedaRedis" . | fromJson -}}
{{- if $kr.passwordEscaped -}}
{{- fail "redis.url's password is URL-escaped: give KEDA the password in a Secret (work.keda.redis.passwordSecret)" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The environment serve and work share: config, then secrets by reference. */}}
{{- define "imgflow.env" -}}
- name: REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ .Values.redis.existingSecret | default (include "imgflow.secretName" .) }}
      key: {{ .Values.redis.key }}
- name: IMGFLOW_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ .Values.secret.existingSecret | default (include "imgflow.secretName" .) }}
      key: {{ .Values.secret.key }}
{{- if eq .Values.blobStore.type "s3" }}
- name: AWS_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef:
      name: {{ .Values.blobStore.s3.existingSecret | default (include "imgflow.secretName" .) }}
      key: AWS_ACCESS_KEY_ID
- name: AWS_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .Values.blobStore.s3.existingSecret | default (include "imgflow.secretName" .) }}
      key: AWS_SECRET_ACCESS_KEY
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Volumes both need with a read-only root: /tmp for multipart spill. */}}
{{- define "imgflow.podCommon" -}}
serviceAccountName: {{ include "imgflow.serviceAccountName" . }}
automountServiceAccountToken: false
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
volumes:
  - name: tmp
    emptyDir:
      sizeLimit: 256Mi
{{- end -}}

{{/*
Where KEDA's redis scaler finds Redis, as JSON: work.keda.redis when set,
else read from redis.url (host:port, the cluster URL's addr= nodes, the
database, rediss:// for TLS, the user and password; the password goes to
the chart's Secret as REDIS_PASSWORD for the TriggerAuthentication).
*/}}
{{- define "imgflow.kedaRedis" -}}
{{- $k := .Values.work.keda.redis -}}
{{- $out := dict "address" $k.address "addresses" (join "," $k.addresses) "databaseIndex" (toString $k.databaseIndex) "enableTLS" (toString $k.enableTLS) "username" $k.username "passwordSecret" $k.passwordSecret.name "passwordKey" $k.passwordSecret.key "passwordFromURL" "" "passwordEscaped" false -}}
{{- if and (not $k.address) (not $k.addresses) .Values.redis.url (not .Values.redis.existingSecret) (not (hasPrefix "redis-sentinel" .Values.redis.url)) -}}
{{- $u := urlParse .Values.redis.url -}}
{{- $host := $u.host -}}
{{- if not (regexMatch ":[0-9]+$" $host) }}{{ $host = printf "%s:6379" $host }}{{ end -}}
{{- $_ := set $out "address" $host -}}
{{- $nodes := list $host -}}
{{- range splitList "&" $u.query -}}
{{- if hasPrefix "addr=" . }}{{ $nodes = append $nodes (trimPrefix "addr=" .) }}{{ end -}}
{{- end -}}
{{- $_ := set $out "addresses" (join "," $nodes) -}}
{{- $db := trimPrefix "/" $u.path -}}
{{- $_ := set $out "databaseIndex" (default "0" $db) -}}
{{- $_ := set $out "enableTLS" (toString (eq $u.scheme "rediss")) -}}
{{- if $u.userinfo -}}
{{- $parts := splitList ":" $u.userinfo -}}
{{- $_ := set $out "username" (first $parts) -}}
{{- if and (gt (len $parts) 1) (not $k.passwordSecret.name) -}}
{{- $pw := join ":" (rest $parts) -}}
{{- if contains "%" $pw }}{{ $_ := set $out "passwordEscaped" true }}{{ end -}}
{{- $_ := set $out "passwordFromURL" $pw -}}
{{- $_ := set $out "passwordSecret" (include "imgflow.secretName" .) -}}
{{- $_ := set $out "passwordKey" "REDIS_PASSWORD" -}}
{{- end -}}
{{- end -}}
{{- else if $k.addresses -}}
{{- $_ := set $out "address" (first $k.addresses) -}}
{{- else -}}
{{- $_ := set $out "addresses" $k.address -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}
