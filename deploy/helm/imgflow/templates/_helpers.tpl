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

{{/* REGISTRY/REPOSITORY@DIGEST, or :TAG (the chart's appVersion when empty) without a digest. */}}
{{- define "imgflow.image" -}}
{{- $i := .Values.image -}}
{{- $repo := $i.repository -}}
{{- with $i.registry }}{{ $repo = printf "%s/%s" (trimSuffix "/" .) $repo }}{{ end -}}
{{- if $i.digest -}}
{{ $repo }}@{{ $i.digest }}
{{- else -}}
{{ $repo }}:{{ $i.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{/* The queues work's ScaledObject watches, as a JSON list: each name in queues and its deliveries queue (worker.DeliveryQueue: NAME-deliveries). */}}
{{- define "imgflow.watchedQueues" -}}
{{- $out := list -}}
{{- range .Values.queues }}{{ $out = append (append $out .) (printf "%s-deliveries" .) }}{{ end -}}
{{- toJson $out -}}
{{- end -}}

{{/* The label matchers of this release's series in Prometheus (seriesSelector, else what the ServiceMonitor's targets carry). */}}
{{- define "imgflow.seriesSelector" -}}
{{- .Values.seriesSelector | default (printf "namespace=%q,job=~%q" .Release.Namespace (printf "%s-(serve|work)-ops" (include "imgflow.fullname" .))) -}}
{{- end -}}

{{/* The ops Service of a component: (dict "root" $ "component" "serve") */}}
{{- define "imgflow.opsService" -}}
{{ include "imgflow.fullname" .root }}-{{ .component }}-ops
{{- end -}}

{{/* The Secret holding what the chart was given in values. */}}
{{- define "imgflow.secretName" -}}
{{ include "imgflow.fullname" . }}
{{- end -}}

{{/*
IMGFLOW_SECRET for the chart's Secret: secret.value when given, else the
value the Secret already holds in the cluster (lookup), so an upgrade that
does not set it keeps it; empty on a first install without it.
*/}}
{{- define "imgflow.appSecret" -}}
{{- if .Values.secret.value -}}
{{ .Values.secret.value }}
{{- else -}}
{{- $s := lookup "v1" "Secret" .Release.Namespace (include "imgflow.secretName" .) -}}
{{- with $s.data }}{{ index . $.Values.secret.key | default "" | b64dec }}{{ end -}}
{{- end -}}
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
{{- if and (not .Values.secret.existingSecret) (lt (len (include "imgflow.appSecret" .)) 16) -}}
{{- fail "secret.value (IMGFLOW_SECRET, at least 16 characters) or secret.existingSecret is required on install (an upgrade without it keeps the installed value)" -}}
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
{{- if and .Values.serve.autoscaling.enabled (not (kindIs "invalid" .Values.serve.replicas)) -}}
{{- fail "serve.replicas is set but serve.autoscaling.enabled is true: the HPA owns serve's replicas (serve.autoscaling.minReplicas/maxReplicas); unset serve.replicas or disable the HPA" -}}
{{- end -}}
{{- if and .Values.work.keda.enabled (not (kindIs "invalid" .Values.work.replicas)) -}}
{{- fail "work.replicas is set but work.keda.enabled is true: KEDA owns work's replicas (work.keda.minReplicaCount/maxReplicaCount); unset work.replicas or disable KEDA" -}}
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


{{/*
Where hosts ("host" or "host:port") are, as NetworkPolicy peers, as JSON
{"peers": [...], "ports": [...], "unknown": [...]}: an IPv4 address is
itself (/32); [POD.]NAME.NAMESPACE.svc[.cluster.local] is that namespace; a bare
NAME is the release's namespace; anything else (an external host name, an
IPv6 address) is unknown and needs peers given in values.
(dict "hosts" LIST "namespace" NS)
*/}}
{{- define "imgflow.peersOf" -}}
{{- $peers := list -}}
{{- $ports := list -}}
{{- $unknown := list -}}
{{- $label := "[a-z0-9]([-a-z0-9]*[a-z0-9])?" -}}
{{- range .hosts -}}
{{- $h := . -}}
{{- if regexMatch "^[^:]+:[0-9]+$" $h }}{{ $ports = append $ports (regexFind "[0-9]+$" $h | atoi) }}{{ $h = regexReplaceAll ":[0-9]+$" $h "" }}{{ end -}}
{{- if regexMatch "^[0-9]+[.][0-9]+[.][0-9]+[.][0-9]+$" $h -}}
{{- $peers = append $peers (dict "ipBlock" (dict "cidr" (printf "%s/32" $h))) -}}
{{- else if regexMatch (printf "^(%s[.])+%s[.]svc([.]cluster[.]local)?[.]?$" $label $label) $h -}}
{{- $ns := regexReplaceAll "^(.*[.])?([a-z0-9-]+)[.]svc([.]cluster[.]local)?[.]?$" $h "${2}" -}}
{{- $peers = append $peers (dict "namespaceSelector" (dict "matchLabels" (dict "kubernetes.io/metadata.name" $ns))) -}}
{{- else if regexMatch (printf "^%s$" $label) $h -}}
{{- $peers = append $peers (dict "namespaceSelector" (dict "matchLabels" (dict "kubernetes.io/metadata.name" $.namespace))) -}}
{{- else -}}
{{- $unknown = append $unknown . -}}
{{- end -}}
{{- end -}}
{{- toJson (dict "peers" (uniq $peers) "ports" (uniq $ports) "unknown" $unknown) -}}
{{- end -}}

{{/*
Redis's NetworkPolicy egress, as JSON {"peers": [...], "ports": [...]}: the
hosts of redis.url (Sentinel's list, a Cluster's addr= nodes) and of KEDA's
Redis addresses, with networkPolicy.redisPeers in place of the derived peers
when set. Rendering fails when the peers cannot be derived.
*/}}
{{- define "imgflow.redisEgress" -}}
{{- $np := .Values.networkPolicy -}}
{{- $hosts := list -}}
{{- if and .Values.redis.url (not .Values.redis.existingSecret) -}}
{{- $u := urlParse .Values.redis.url -}}
{{- $hosts = concat $hosts (splitList "," $u.host) -}}
{{- range splitList "&" $u.query }}{{ if hasPrefix "addr=" . }}{{ $hosts = append $hosts (trimPrefix "addr=" .) }}{{ end }}{{ end -}}
{{- end -}}
{{- with .Values.work.keda.redis.address }}{{ $hosts = append $hosts . }}{{ end -}}
{{- $hosts = concat $hosts .Values.work.keda.redis.addresses -}}
{{- $d := include "imgflow.peersOf" (dict "hosts" $hosts "namespace" .Release.Namespace) | fromJson -}}
{{- $peers := $np.redisPeers -}}
{{- if not $peers -}}
{{- if or (not $hosts) $d.unknown -}}
{{- fail (printf "networkPolicy.redisPeers is required: Redis egress is opened only to where Redis is, and %s (e.g. [{ipBlock: {cidr: 10.1.2.3/32}}] or [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: data}}}])" (ternary "redis.url is not in values" (printf "%s is neither an address nor a NAME.NAMESPACE.svc name" (join ", " $d.unknown)) (not $hosts))) -}}
{{- end -}}
{{- $peers = $d.peers -}}
{{- end -}}
{{- $ports := list -}}
{{- range concat $np.redisPorts $d.ports }}{{ $ports = append $ports (int .) }}{{ end -}}
{{- toJson (dict "peers" $peers "ports" (uniq $ports)) -}}
{{- end -}}

{{/* The egress rules to DNS and Redis, scoped to where they are; serve, work and the upstream share them. */}}
{{- define "imgflow.dnsRedisEgress" -}}
{{- $np := .Values.networkPolicy -}}
{{- $r := include "imgflow.redisEgress" . | fromJson -}}
{{- if not $np.dnsPeers }}{{ fail "networkPolicy.dnsPeers is required: where DNS is (an empty list would open port 53 everywhere)" }}{{ end -}}
# DNS, at the cluster's DNS pods (networkPolicy.dnsPeers).
- to:
    {{- toYaml $np.dnsPeers | nindent 4 }}
  ports:
    - {port: 53, protocol: UDP}
    - {port: 53, protocol: TCP}
# Redis (and Sentinel / Cluster nodes), where it is (networkPolicy.redisPeers or redis.url's hosts).
- to:
    {{- toYaml $r.peers | nindent 4 }}
  ports:
    {{- range $r.ports }}
    - {port: {{ . }}, protocol: TCP}
    {{- end }}
{{- end -}}

{{/*
Annotations of serve's and work's pods: a checksum of the chart's ConfigMap
and Secret (a change rolls the pods), of the existingSecrets' data when the
cluster can be read (an upgrade after an external rotation rolls them too),
rolloutRevision (a change rolls them on demand), then podAnnotations.
(dict "root" $ "component" "serve")
*/}}
{{- define "imgflow.podAnnotations" -}}
{{- $root := .root -}}
{{- $v := $root.Values -}}
checksum/config: {{ include (print $root.Template.BasePath "/configmap.yaml") $root | sha256sum }}
checksum/secret: {{ include (print $root.Template.BasePath "/secret.yaml") $root | sha256sum }}
{{- $external := list -}}
{{- range list $v.secret.existingSecret $v.redis.existingSecret (ternary $v.blobStore.s3.existingSecret "" (eq $v.blobStore.type "s3")) (ternary $v.serve.adminTokenExistingSecret "" (eq .component "serve")) -}}
{{- if . -}}
{{- $found := lookup "v1" "Secret" $root.Release.Namespace . -}}
{{- $external = append $external (printf "%s=%s" . (toJson ($found.data | default dict))) -}}
{{- end -}}
{{- end }}
{{- with $external }}
checksum/external-secrets: {{ join "\n" (uniq .) | sha256sum }}
{{- end }}
{{- with $v.rolloutRevision }}
imgflow.io/rollout-revision: {{ . | toString | quote }}
{{- end }}
{{- with index $v .component "podAnnotations" }}
{{ toYaml . }}
{{- end }}
{{- end -}}
