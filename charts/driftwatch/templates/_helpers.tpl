{{/* Chart name, overridable with nameOverride. */}}
{{- define "driftwatch.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Full name of every resource: fullnameOverride, else "<release>-<name>" (just
the release name when it already contains the chart name). Truncated to 63
characters because some name fields are DNS labels.
*/}}
{{- define "driftwatch.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Chart name and version, for the helm.sh/chart label. */}}
{{- define "driftwatch.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every resource. */}}
{{- define "driftwatch.labels" -}}
helm.sh/chart: {{ include "driftwatch.chart" . }}
{{ include "driftwatch.selectorLabels" . }}
app.kubernetes.io/version: {{ (default .Chart.AppVersion .Values.image.tag) | trunc 63 | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Selector labels: stable across upgrades (a Deployment's selector is immutable). */}}
{{- define "driftwatch.selectorLabels" -}}
app.kubernetes.io/name: {{ include "driftwatch.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Name of the daemon's ServiceAccount. */}}
{{- define "driftwatch.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "driftwatch.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Name of the run pods' ServiceAccount. */}}
{{- define "driftwatch.runServiceAccountName" -}}
{{- if .Values.runner.serviceAccount.create }}
{{- default (printf "%s-run" (include "driftwatch.fullname" .) | trunc 63 | trimSuffix "-") .Values.runner.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.runner.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Namespace of the per-run Jobs. */}}
{{- define "driftwatch.runNamespace" -}}
{{- default .Release.Namespace .Values.runner.namespace }}
{{- end }}

{{/* Name of the leader election Lease. */}}
{{- define "driftwatch.leaseName" -}}
{{- default (printf "%s-leader" (include "driftwatch.fullname" .) | trunc 63 | trimSuffix "-") .Values.leaderElection.leaseName }}
{{- end }}

{{/* The tool in the image: image.tool, "terraform" when unset. */}}
{{- define "driftwatch.tool" -}}
{{- .Values.image.tool | default "terraform" }}
{{- end }}

{{/*
Image reference; the tag defaults to the chart's appVersion, with "-tofu"
for the OpenTofu variant (the tags `make image` and the Dockerfile's
TOOL argument make: <version> and <version>-tofu).
*/}}
{{- define "driftwatch.image" -}}
{{- $suffix := ternary "-tofu" "" (eq (include "driftwatch.tool" .) "tofu") }}
{{- printf "%s:%s" .Values.image.repository (default (printf "%s%s" .Chart.AppVersion $suffix) .Values.image.tag) }}
{{- end }}

{{/* config.server.listen ("" when unset). */}}
{{- define "driftwatch.listen" -}}
{{- toString (dig "server" "listen" "" (.Values.config | default dict)) }}
{{- end }}

{{/* The container port: the port of config.server.listen. */}}
{{- define "driftwatch.port" -}}
{{- include "driftwatch.listen" . | splitList ":" | last }}
{{- end }}

{{/*
config.runner.kubernetes.callback_listen: the run pods' callback, on a
listener of its own (default ":8081", the daemon's).
*/}}
{{- define "driftwatch.callbackListen" -}}
{{- toString (dig "runner" "kubernetes" "callback_listen" ":8081" (.Values.config | default dict)) }}
{{- end }}

{{/* The callback's container port: the port of callbackListen. */}}
{{- define "driftwatch.callbackPort" -}}
{{- include "driftwatch.callbackListen" . | splitList ":" | last }}
{{- end }}

{{/* Name of the PVC holding the database. */}}
{{- define "driftwatch.claimName" -}}
{{- default (include "driftwatch.fullname" .) .Values.persistence.existingClaim }}
{{- end }}

{{/*
Guards the schema also states: `helm template | kubectl apply` and
`--skip-schema-validation` bypass values.schema.json, so the templates check
what would make a broken release.
*/}}
{{- define "driftwatch.validate" -}}
{{- if and (gt (int .Values.replicaCount) 1) (not .Values.leaderElection.enabled) (not (include "driftwatch.postgres" .)) }}
{{- fail "replicaCount > 1 requires leaderElection.enabled=true or store.postgres: driftwatch's scheduler is a singleton, and two leaderless replicas on SQLite would run every workspace twice" }}
{{- end }}
{{- if lt (int .Values.replicaCount) 0 }}
{{- fail "replicaCount must not be negative" }}
{{- end }}
{{- $listen := include "driftwatch.listen" . }}
{{- if not (regexMatch "^(0\\.0\\.0\\.0|\\[::\\])?:[0-9]+$" $listen) }}
{{- fail (printf "config.server.listen must be \"0.0.0.0:<port>\", \"[::]:<port>\" or \":<port>\", not %q: the Service and probes reach the daemon from outside the pod (driftwatch's own default is 127.0.0.1:8080)" $listen) }}
{{- end }}
{{- $cb := include "driftwatch.callbackListen" . }}
{{- if not (regexMatch "^(0\\.0\\.0\\.0|\\[::\\])?:[0-9]+$" $cb) }}
{{- fail (printf "config.runner.kubernetes.callback_listen must be \"0.0.0.0:<port>\", \"[::]:<port>\" or \":<port>\", not %q: run pods reach the callback from outside the pod" $cb) }}
{{- end }}
{{- if eq (include "driftwatch.callbackPort" .) (include "driftwatch.port" .) }}
{{- fail (printf "config.runner.kubernetes.callback_listen (%s) must use another port than config.server.listen (%s): run pods may reach the callback port only" $cb $listen) }}
{{- end }}
{{- if eq (int .Values.service.callbackPort) (int .Values.service.port) }}
{{- fail "service.callbackPort must differ from service.port" }}
{{- end }}
{{- $kg := toString (dig "terraform" "kill_grace" "10s" (.Values.config | default dict)) }}
{{- $re := "^(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?$" }}
{{- if and $kg (regexMatch $re $kg) }}
{{- $secs := add (mul (atoi (regexReplaceAll $re $kg "${1}")) 3600) (mul (atoi (regexReplaceAll $re $kg "${2}")) 60) (atoi (regexReplaceAll $re $kg "${3}")) }}
{{- if le (int .Values.terminationGracePeriodSeconds) (int $secs) }}
{{- fail (printf "terminationGracePeriodSeconds (%d) must exceed config.terraform.kill_grace (%s): Terraform would be killed before it can release its locks" (int .Values.terminationGracePeriodSeconds) $kg) }}
{{- end }}
{{- end }}
{{- if not (has (include "driftwatch.tool" .) (list "terraform" "tofu")) }}
{{- fail (printf "image.tool must be terraform or tofu, not %q" (include "driftwatch.tool" .)) }}
{{- end }}
{{- if and .Values.tls.existingSecret (not .Values.tls.enabled) }}
{{- fail "tls.existingSecret needs tls.enabled=true" }}
{{- end }}
{{- range $key, $_ := .Values.secrets }}
{{- if not (has $key (list "slack" "opsgenie" "git" "cloud")) }}
{{- fail (printf "secrets.%s: unknown key (use slack, opsgenie, git or cloud)" $key) }}
{{- end }}
{{- end }}
{{- end }}

{{/* The config file: .Values.config with the generated runner block (and terraform.binary tofu for image.tool tofu). */}}
{{- define "driftwatch.config" -}}
{{- $cfg := deepCopy (.Values.config | default dict) }}
{{- $user := deepCopy (get $cfg "runner" | default dict) }}
{{- $pullSecrets := list }}
{{- range .Values.imagePullSecrets }}
{{- $pullSecrets = append $pullSecrets .name }}
{{- end }}
{{- $kube := dict
  "namespace" (include "driftwatch.runNamespace" .)
  "image" (include "driftwatch.image" .)
  "image_pull_policy" .Values.image.pullPolicy
  "service_account" (include "driftwatch.runServiceAccountName" .)
  "callback_url" (printf "%s://%s.%s.svc:%v" (include "driftwatch.scheme" .) (include "driftwatch.fullname" .) .Release.Namespace .Values.service.callbackPort)
  "callback_listen" (include "driftwatch.callbackListen" .)
  "events" true }}
{{- if .Values.tls.enabled }}
{{- $_ := set $kube "callback_ca_file" (printf "%s/ca.crt" (include "driftwatch.tlsDir" .)) }}
{{- $server := deepCopy (get $cfg "server" | default dict) }}
{{- $_ := set $server "tls_cert_file" (get $server "tls_cert_file" | default (printf "%s/tls.crt" (include "driftwatch.tlsDir" .))) }}
{{- $_ := set $server "tls_key_file" (get $server "tls_key_file" | default (printf "%s/tls.key" (include "driftwatch.tlsDir" .))) }}
{{- $_ := set $cfg "server" $server }}
{{- end }}
{{- if $pullSecrets }}
{{- $_ := set $kube "image_pull_secrets" $pullSecrets }}
{{- end }}
{{- $gen := dict "mode" "kubernetes" "kubernetes" $kube }}
{{- if .Values.leaderElection.enabled }}
{{- $_ := set $gen "leader_election" (dict "enabled" true "lease_name" (include "driftwatch.leaseName" .) "namespace" .Release.Namespace) }}
{{- end }}
{{- $_ := set $cfg "runner" (mergeOverwrite $gen $user) }}
{{- if eq (include "driftwatch.tool" .) "tofu" }}
{{- $tf := deepCopy (get $cfg "terraform" | default dict) }}
{{- $_ := set $tf "binary" (get $tf "binary" | default "tofu") }}
{{- $_ := set $cfg "terraform" $tf }}
{{- end }}
{{- if include "driftwatch.postgres" . }}
{{- $store := deepCopy (get $cfg "store" | default dict) }}
{{- $_ := set $store "driver" "postgres" }}
{{- $_ := set $store "dsn_file" (printf "%s/%s" (include "driftwatch.postgresDir" .) .Values.store.postgres.secretKey) }}
{{- $_ := set $cfg "store" $store }}
{{- end }}
{{- toYaml $cfg }}
{{- end }}

{{/* "true" when the store is PostgreSQL (store.postgres.existingSecret), else "". */}}
{{- define "driftwatch.postgres" -}}
{{- if .Values.store.postgres.existingSecret }}true{{ end }}
{{- end }}

{{/* Where the PostgreSQL DSN's Secret is mounted. */}}
{{- define "driftwatch.postgresDir" -}}
/var/run/secrets/driftwatch/postgres
{{- end }}

{{/* "https" with tls.enabled, else "http". */}}
{{- define "driftwatch.scheme" -}}
{{- if .Values.tls.enabled }}https{{ else }}http{{ end }}
{{- end }}

{{/* Where the daemon's serving certificate is mounted (tls.enabled). */}}
{{- define "driftwatch.tlsDir" -}}
/var/run/secrets/driftwatch/tls
{{- end }}

{{/* The Secret holding tls.crt, tls.key and ca.crt: tls.existingSecret, else the generated one. */}}
{{- define "driftwatch.tlsSecretName" -}}
{{- default (printf "%s-tls" (include "driftwatch.fullname" .) | trunc 63 | trimSuffix "-") .Values.tls.existingSecret }}
{{- end }}

{{/* The Service's DNS names: the serving certificate's subject alternative names. */}}
{{- define "driftwatch.dnsNames" -}}
{{- $n := include "driftwatch.fullname" . }}
{{- $ns := .Release.Namespace }}
{{- list $n (printf "%s.%s" $n $ns) (printf "%s.%s.svc" $n $ns) (printf "%s.%s.svc.cluster.local" $n $ns) | toJson }}
{{- end }}

{{/*
A probe value (dict "probe" <probe> "root" $): with tls.enabled, an httpGet
probe without a scheme gets scheme HTTPS (the kubelet does not verify the
certificate).
*/}}
{{- define "driftwatch.probe" -}}
{{- $p := deepCopy .probe }}
{{- if and .root.Values.tls.enabled (hasKey $p "httpGet") }}
{{- $get := get $p "httpGet" }}
{{- if not (hasKey $get "scheme") }}
{{- $_ := set $get "scheme" "HTTPS" }}
{{- end }}
{{- end }}
{{- toYaml $p }}
{{- end }}
