{{/*
Chart name, truncated to the 63 characters of a DNS label.
*/}}
{{- define "ndbench.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Full name of the release's objects: the release name, plus the chart name unless the release
name already contains it. The headless Service adds "-headless", so this stays at 54.
*/}}
{{- define "ndbench.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 54 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 54 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 54 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "ndbench.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Labels of every object.
*/}}
{{- define "ndbench.labels" -}}
helm.sh/chart: {{ include "ndbench.chart" . }}
{{ include "ndbench.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
Labels that select the nodes' pods.
*/}}
{{- define "ndbench.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ndbench.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
The headless Service: one DNS record per node (SRV _http._tcp.NAME, A NAME), for discovery.
*/}}
{{- define "ndbench.headlessName" -}}
{{- printf "%s-headless" (include "ndbench.fullname" .) }}
{{- end }}

{{- define "ndbench.headlessFQDN" -}}
{{- printf "%s.%s.svc.%s" (include "ndbench.headlessName" .) .Release.Namespace .Values.discovery.clusterDomain }}
{{- end }}

{{/*
Name of the Secret holding the token, and whether the chart creates it.
*/}}
{{- define "ndbench.secretName" -}}
{{- if .Values.token.existingSecret }}
{{- .Values.token.existingSecret }}
{{- else }}
{{- printf "%s-token" (include "ndbench.fullname" .) }}
{{- end }}
{{- end }}

{{- define "ndbench.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "ndbench.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "ndbench.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{/*
Arguments of `ndbench serve` on every node. $(POD_NAME) and $(POD_IP) are expanded by
Kubernetes from the container's environment (the downward API).
*/}}
{{- define "ndbench.args" -}}
- serve
- --listen
- {{ printf "0.0.0.0:%d" (int .Values.port) | quote }}
{{- if .Values.tls.enabled }}
- --tls-cert
- /etc/ndbench-tls/tls.crt
- --tls-key
- /etc/ndbench-tls/tls.key
- --peer-ca
- /etc/ndbench-tls/ca.crt
{{- if .Values.tls.clientAuth }}
- --tls-client-ca
- /etc/ndbench-tls/ca.crt
{{- end }}
{{- else if .Values.insecure }}
{{- /* The values say so: plain http off loopback, between the nodes too. */}}
- --insecure-listen
- --insecure-peers
{{- else }}
{{- fail "tls.enabled is false: set insecure=true to serve plain http (the token then crosses the network in clear text), or keep TLS on with a certificate Secret (tls.secretName)" }}
{{- end }}
- --node-id
- $(POD_NAME)
- --advertise
- {{ printf "$(POD_IP):%d" (int .Values.port) | quote }}
{{- if .Values.etcd.endpoints }}
- --discovery
- {{ printf "etcd:%s" .Values.etcd.endpoints | quote }}
- --discovery-prefix
- {{ .Values.etcd.discoveryPrefix | quote }}
{{- else }}
- --discovery
- {{ printf "dns:%s:%d" (include "ndbench.headlessFQDN" .) (int .Values.port) | quote }}
{{- end }}
{{- with .Values.nodeLabels }}
- --labels
- {{ include "ndbench.nodeLabels" . | quote }}
{{- end }}
- -c
- /etc/ndbench/ndbench.yaml
{{- if .Values.etcd.config.enabled }}
{{- if not .Values.etcd.endpoints }}
{{- fail "etcd.config.enabled needs etcd.endpoints" }}
{{- end }}
- --config-etcd
- {{ .Values.etcd.endpoints | quote }}
- --config-prefix
- {{ .Values.etcd.config.prefix | quote }}
{{- end }}
{{- range .Values.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end }}

{{/*
nodeLabels as k=v,k=v in key order.
*/}}
{{- define "ndbench.nodeLabels" -}}
{{- $pairs := list }}
{{- range $k, $v := . }}
{{- $pairs = append $pairs (printf "%s=%s" $k $v) }}
{{- end }}
{{- join "," $pairs }}
{{- end }}

{{/* The kubernetes.io/tls Secret the nodes' certificate comes from. */}}
{{- define "ndbench.tlsSecretName" -}}
{{- default (printf "%s-tls" (include "ndbench.fullname" .)) .Values.tls.secretName }}
{{- end }}
