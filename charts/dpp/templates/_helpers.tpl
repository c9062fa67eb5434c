{{/*
Helpers of the dpp chart. Component-scoped helpers take a context built as
  (dict "root" $ "name" $name "c" $component)
*/}}

{{/* Chart name, for the app.kubernetes.io/name label. */}}
{{- define "dpp.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Resource name prefix: fullnameOverride, else the release name. Leaves room for "-<component>". */}}
{{- define "dpp.fullname" -}}
{{- default .Release.Name .Values.fullnameOverride | trunc 47 | trimSuffix "-" -}}
{{- end -}}

{{- define "dpp.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Name of a component's Deployment, Service, HPA and PDB: <prefix>-<component>. */}}
{{- define "dpp.componentName" -}}
{{- printf "%s-%s" (include "dpp.fullname" .root) .name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Name of a gRPC component's headless Service (component context): <prefix>-<component>-headless, the prefix and
component cut so that the whole stays a 63-character DNS label. Its DNS name resolves to the ready pods' addresses,
which the callers' gRPC clients balance over (round robin).
*/}}
{{- define "dpp.headlessName" -}}
{{- printf "%s-%s" (include "dpp.fullname" .root) .name | trunc 54 | trimSuffix "-" | printf "%s-headless" -}}
{{- end -}}

{{/* <NAME>_ADDR of a gRPC component (component context): dns:///<headless Service>:<port>. */}}
{{- define "dpp.addr" -}}
{{- printf "dns:///%s:%v" (include "dpp.headlessName" .) .c.port -}}
{{- end -}}

{{/* <NAME>_ADDR variable name of a component: variants-units -> VARIANTS_UNITS_ADDR. */}}
{{- define "dpp.addrVar" -}}
{{- printf "%s_ADDR" (. | upper | replace "-" "_") -}}
{{- end -}}

{{/* Labels of every resource (root context). */}}
{{- define "dpp.commonLabels" -}}
helm.sh/chart: {{ include "dpp.chart" . }}
app.kubernetes.io/name: {{ include "dpp.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: dpp
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Labels of a component's resources (component context). */}}
{{- define "dpp.labels" -}}
{{ include "dpp.commonLabels" .root }}
app.kubernetes.io/component: {{ .name }}
{{- end -}}

{{/* Selector labels of a component (component context); never change them after a release exists. */}}
{{- define "dpp.selectorLabels" -}}
app.kubernetes.io/name: {{ include "dpp.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .name }}
{{- end -}}

{{/* The one image, by digest when given, else by tag (default: appVersion). */}}
{{- define "dpp.image" -}}
{{- $img := .Values.image -}}
{{- if $img.digest -}}
{{- printf "%s@%s" $img.repository $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $img.repository (default .Chart.AppVersion $img.tag) -}}
{{- end -}}
{{- end -}}

{{- define "dpp.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "dpp.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Name of the shared ConfigMap. */}}
{{- define "dpp.configName" -}}
{{- printf "%s-config" (include "dpp.fullname" .) -}}
{{- end -}}

{{/*
Secret-backed variables of a component, shared by its Deployment and its
migrations init container (component context): DATABASE_URL (its own role),
BUS_DATABASE_URL when bus.databaseSecret is set.
*/}}
{{- define "dpp.databaseEnv" -}}
{{- $db := .c.databaseSecret | default dict -}}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ required (printf "components.%s.databaseSecret.name is required" .name) $db.name | quote }}
      key: {{ required (printf "components.%s.databaseSecret.key is required" .name) $db.key | quote }}
{{- with .root.Values.bus.databaseSecret }}
{{- if .name }}
- name: BUS_DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ .name | quote }}
      key: {{ required "bus.databaseSecret.key is required when bus.databaseSecret.name is set" .key | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/*
Internal authentication (docs/decisions/0012-internal-authentication.md).
Name of the Secret with the calling components' private keys, one key per component name.
*/}}
{{- define "dpp.internalAuthSecretName" -}}
{{- default (printf "%s-internal-auth" (include "dpp.fullname" .)) .Values.internalAuth.existingSecret -}}
{{- end -}}

{{/* Non-empty when an enabled component lists this one in its callers (component context): it signs calls. */}}
{{- define "dpp.isCaller" -}}
{{- $me := .name -}}
{{- range $n, $c := (include "dpp.components" .root | fromYaml) -}}
{{- if and $c.enabled (has $me ($c.callers | default list)) }}true{{ end -}}
{{- end -}}
{{- end -}}

{{/*
INTERNAL_AUTH_TRUSTED_KEYS of a gRPC component (component context): "<caller>:<public key>"
for every key of every caller it lists. An enabled component of the chart listed as a caller
must have a key; a caller from outside the chart (the admin CLI) without one is left out.
*/}}
{{- define "dpp.trustedKeys" -}}
{{- $entries := list -}}
{{- range $caller := (.c.callers | default list) -}}
{{- $pub := index $.root.Values.internalAuth.publicKeys $caller | default list -}}
{{- $cc := index (include "dpp.components" $.root | fromYaml) $caller -}}
{{- if and (not $pub) $cc -}}
{{- if $cc.enabled -}}
{{- fail (printf "components.%s.callers names %s, but internalAuth.publicKeys.%s holds no key (services/kit/src/internal-auth-keygen.ts %s makes a pair)" $.name $caller $caller $caller) -}}
{{- end -}}
{{- end -}}
{{- range $k := $pub -}}
{{- $entries = append $entries (printf "%s:%s" $caller $k) -}}
{{- end -}}
{{- end -}}
{{- if not $entries -}}
{{- fail (printf "components.%s trusts no caller: list its callers in components.%s.callers and their keys in internalAuth.publicKeys" .name .name) -}}
{{- end -}}
{{- join "," $entries -}}
{{- end -}}

{{/* A component's own variables (component context): name: "value" pairs, sorted. */}}
{{- define "dpp.extraEnv" -}}
{{- range $k, $v := (.c.env | default dict) }}
- name: {{ $k }}
  value: {{ $v | toString | quote }}
{{- end }}
{{- end -}}

{{/*
Variables of a serving component (component context). The shared ConfigMap
(envFrom) carries the rest; entries here win over it.
*/}}
{{- define "dpp.serveEnv" -}}
{{- $root := .root -}}
{{- if eq .c.kind "grpc" -}}
- name: GRPC_ADDR
  value: {{ printf "0.0.0.0:%v" .c.port | quote }}
{{- else -}}
- name: HTTP_HOST
  value: "0.0.0.0"
- name: HTTP_PORT
  value: {{ .c.port | toString | quote }}
{{- end }}
- name: OTEL_SERVICE_NAME
  value: {{ .name | quote }}
{{ include "dpp.databaseEnv" . }}
{{- if and .c.redis $root.Values.redis.secret.name }}
- name: REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ $root.Values.redis.secret.name | quote }}
      key: {{ required "redis.secret.key is required when redis.secret.name is set" $root.Values.redis.secret.key | quote }}
{{- end }}
{{- range $var, $ref := (.c.secretEnv | default dict) }}
- name: {{ $var }}
  valueFrom:
    secretKeyRef:
      name: {{ $ref.name | quote }}
      key: {{ $ref.key | quote }}
{{- end }}
{{- if eq .c.kind "grpc" }}
- name: INTERNAL_AUTH_TRUSTED_KEYS
  value: {{ include "dpp.trustedKeys" . | quote }}
{{- end }}
{{- if include "dpp.isCaller" . }}
- name: INTERNAL_AUTH_PRIVATE_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "dpp.internalAuthSecretName" $root | quote }}
      key: {{ .name | quote }}
{{- end }}
{{- with $root.Values.bus.kafka.sasl }}
{{- if and .mechanism .secret.name }}
- name: KAFKA_SASL_USERNAME
  valueFrom:
    secretKeyRef:
      name: {{ .secret.name | quote }}
      key: {{ .secret.usernameKey | quote }}
- name: KAFKA_SASL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .secret.name | quote }}
      key: {{ .secret.passwordKey | quote }}
{{- end }}
{{- end }}
{{- include "dpp.extraEnv" . }}
{{- end -}}

{{/*
The components: each registered service's defaults from registry.generated.yaml (written from services.json
by tools/gen-registry.mjs), with each key that values.yaml or the release's values set for it replacing the
default, and the blocks of values.yaml for services not registered yet. As YAML; every template
reads it with (include "dpp.components" $ | fromYaml).
*/}}
{{- define "dpp.components" -}}
{{- $registry := (.Files.Get "registry.generated.yaml" | fromYaml).components | default dict -}}
{{- $out := dict -}}
{{- range $name, $c := .Values.components -}}
{{- $_ := set $out $name (deepCopy $c) -}}
{{- end -}}
{{- range $name, $defaults := $registry -}}
{{- $c := deepCopy $defaults -}}
{{- range $k, $v := (index $out $name | default dict) -}}
{{- $_ := set $c $k $v -}}
{{- end -}}
{{- $_ := set $out $name $c -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}
