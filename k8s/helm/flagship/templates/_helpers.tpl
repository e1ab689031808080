{{- define "flagship.fullname" -}}
{{- default .Release.Name .Values.nameOverride | trunc 30 | trimSuffix "-" -}}
{{- end }}

{{/*
The ServiceAccount of one app (or of the migration Job, app "migrate"): its own, so an IAM role
for service accounts can grant each app only what it reads. Created by the chart:
<fullname>-<app> unless the app's serviceAccount.name says otherwise; not created: that name, else
serviceAccount.name, else "default". Argument: dict root, app, spec (the app's values).
*/}}
{{- define "flagship.serviceAccountName" -}}
{{- $sa := .root.Values.serviceAccount -}}
{{- $name := "" -}}
{{- with .spec.serviceAccount }}{{ $name = .name }}{{ end -}}
{{- if $sa.create -}}
{{- default (printf "%s-%s" (include "flagship.fullname" .root) .app) $name -}}
{{- else -}}
{{- default (default "default" $sa.name) $name -}}
{{- end -}}
{{- end }}

{{/*
One ServiceAccount: the chart's annotations for all (serviceAccount.annotations) and the app's
own (an IAM role per app). Argument: dict root, app, spec, and for the migration Job's component
and hook (its hook annotations).
*/}}
{{- define "flagship.serviceAccount" -}}
{{- $annotations := dict -}}
{{- with .root.Values.serviceAccount.annotations }}{{ $annotations = . }}{{ end -}}
{{- $own := dict -}}
{{- with .spec.serviceAccount }}{{ with .annotations }}{{ $own = . }}{{ end }}{{ end -}}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "flagship.serviceAccountName" . }}
  labels:
    {{- include "flagship.commonLabels" .root | nindent 4 }}
    app.kubernetes.io/name: {{ .app }}
    {{- with .component }}
    app.kubernetes.io/component: {{ . }}
    {{- end }}
  {{- if or $annotations $own .hook }}
  annotations:
    {{- with .hook }}
    {{- . | nindent 4 }}
    {{- end }}
    {{- range $k, $v := $annotations }}
    {{- if not (hasKey $own $k) }}
    {{ $k }}: {{ $v | quote }}
    {{- end }}
    {{- end }}
    {{- range $k, $v := $own }}
    {{ $k }}: {{ $v | quote }}
    {{- end }}
  {{- end }}
# The apps never call the Kubernetes API.
automountServiceAccountToken: false
{{- end }}

{{/* Labels shared by everything of the release. Argument: the root context. */}}
{{- define "flagship.commonLabels" -}}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: flagship
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{/* Selector of one workload. Argument: dict root, component. */}}
{{- define "flagship.selectorLabels" -}}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/*
SHUTDOWN_GRACE_MS of one workload. The gateway drains for its longest request: its
PROVIDER_TOTAL_TIMEOUT_MS (config, default 300000) plus gatewayDrainMarginMs, in which it cuts and
bills what is still under way (it cuts 3 s before the grace ends); never less than shutdownGraceMs.
Argument: dict root, app, spec.
*/}}
{{- define "flagship.shutdownGraceMs" -}}
{{- $v := .root.Values -}}
{{- if eq .app "ai-gateway" -}}
{{- max $v.shutdownGraceMs (add (default 300000 .spec.config.PROVIDER_TOTAL_TIMEOUT_MS) $v.gatewayDrainMarginMs) -}}
{{- else -}}
{{- $v.shutdownGraceMs -}}
{{- end -}}
{{- end }}

{{/*
The non-secret environment of one workload (its ConfigMap's data). Argument: dict root, app, port,
spec (the app's values), instance (orep-server only).
*/}}
{{- define "flagship.configData" -}}
{{- $v := .root.Values -}}
NODE_ENV: {{ $v.nodeEnv | quote }}
LOG_LEVEL: {{ $v.logLevel | quote }}
SHUTDOWN_GRACE_MS: {{ include "flagship.shutdownGraceMs" . | quote }}
METRICS_PORT: {{ $v.metricsPort | toString | quote }}
{{- if and $v.postgres.url (not (include "flagship.databaseUrlSecret" .)) }}
DATABASE_URL: {{ $v.postgres.url | quote }}
{{- end }}
DATABASE_POOL_SIZE: {{ $v.postgres.poolSize | toString | quote }}
{{- include "flagship.databaseTlsVars" .root }}
{{- if $v.redis.url }}
REDIS_URL: {{ $v.redis.url | quote }}
{{- end }}
REDIS_KEY_PREFIX: {{ $v.redis.keyPrefix | quote }}
{{- if $v.tracing.endpoint }}
OTEL_EXPORTER_OTLP_ENDPOINT: {{ $v.tracing.endpoint | quote }}
OTEL_TRACES_SAMPLER: {{ $v.tracing.sampler | quote }}
OTEL_TRACES_SAMPLER_ARG: {{ $v.tracing.samplerArg | quote }}
{{- with $v.tracing.resourceAttributes }}
OTEL_RESOURCE_ATTRIBUTES: {{ include "flagship.resourceAttributes" . | quote }}
{{- end }}
{{- end }}
{{- /* An app's own secret (awsSecretsManagerSecretId) lets its IAM role read nothing of the others'. orep-server reads only its own (its client-side keys), never the shared one. */}}
{{- $secretId := default $v.secrets.awsSecretsManager.secretId .spec.awsSecretsManagerSecretId }}
{{- if eq .app "orep-server" }}{{ $secretId = .spec.awsSecretsManagerSecretId }}{{ end }}
{{- if $secretId }}
SECRETS_MANAGER_SECRET_ID: {{ $secretId | quote }}
SECRETS_REFRESH_S: {{ $v.secrets.awsSecretsManager.refreshSeconds | toString | quote }}
AWS_REGION: {{ $v.secrets.awsSecretsManager.region | quote }}
{{- end }}
{{- if eq .app "orep-server" }}
OREP_HOST: "0.0.0.0"
OREP_PORT: {{ .port | toString | quote }}
OREP_TENANT_ID: {{ .instance.tenantId | quote }}
OREP_ENVIRONMENT: {{ .instance.environment | quote }}
{{- /* The SSE URL names OREP_PUBLIC_URL (required in production with push on): where browsers reach an exposed instance, through the ingress whose hop TRUST_PROXY believes; else its Service. */}}
{{- if .instance.publicUrl }}
TRUST_PROXY: {{ $v.trustProxy | toString | quote }}
{{- end }}
{{- if not (hasKey .spec.config "OREP_PUBLIC_URL") }}
OREP_PUBLIC_URL: {{ default (printf "http://%s-orep-%s.%s:%v" (include "flagship.fullname" .root) .instance.name .root.Release.Namespace .port) .instance.publicUrl | quote }}
{{- end }}
{{- else }}
HOST: "0.0.0.0"
PORT: {{ .port | toString | quote }}
TRUST_PROXY: {{ $v.trustProxy | toString | quote }}
{{- end }}
{{- if eq .app "management-api" }}
IDP_MODE: {{ $v.idp.mode | quote }}
IDP_ISSUER: {{ $v.idp.issuer | quote }}
IDP_AUDIENCE: {{ $v.idp.audience | quote }}
IDP_JWKS_URI: {{ $v.idp.jwksUri | quote }}
{{- if $v.idp.clientId }}
IDP_CLIENT_ID: {{ $v.idp.clientId | quote }}
{{- end }}
{{- if $v.idp.displayName }}
IDP_DISPLAY_NAME: {{ $v.idp.displayName | quote }}
{{- end }}
{{- end }}
{{- if or (eq .app "management-api") (eq .app "ai-gateway") }}
OAUTH_ISSUER: {{ $v.oauth.issuer | quote }}
OAUTH_AUDIENCE: {{ $v.oauth.audience | quote }}
{{- end }}
{{- range $name, $value := .spec.config }}
{{ $name }}: {{ $value | toString | quote }}
{{- end }}
{{- end }}

{{/* env entries read from the existing Secret. Argument: as flagship.configData. */}}
{{- define "flagship.secretEnv" -}}
{{- $v := .root.Values -}}
{{- $secret := $v.secrets.existingSecret -}}
{{- with include "flagship.databaseUrlSecret" . }}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef: {{ . }}
{{- end }}
{{- if $secret }}
{{- if not $v.redis.url }}
- name: REDIS_URL
  valueFrom:
    secretKeyRef: { name: {{ $secret | quote }}, key: REDIS_URL }
{{- end }}
{{- if eq .app "orep-server" }}
- name: OREP_AUTH_TOKEN
  valueFrom:
    secretKeyRef: { name: {{ $secret | quote }}, key: {{ .instance.authTokenKey | quote }} }
{{- with .instance.clientKeysKey }}
- name: OREP_CLIENT_KEYS
  valueFrom:
    secretKeyRef: { name: {{ $secret | quote }}, key: {{ . | quote }} }
{{- end }}
{{- with .instance.mobileKeysKey }}
- name: OREP_MOBILE_KEYS
  valueFrom:
    secretKeyRef: { name: {{ $secret | quote }}, key: {{ . | quote }} }
{{- end }}
{{- end }}
{{- range $item := .spec.secretEnv }}
- name: {{ $item.name }}
  valueFrom:
    secretKeyRef: { name: {{ $secret | quote }}, key: {{ default $item.name $item.key | quote }}, optional: {{ default false $item.optional }} }
{{- end }}
{{- end }}
{{- end }}

{{/*
The image of one app: <repository>/<app>@<digest> when the app's image.digest is set (it wins over
the tag), else <repository>/<app>:<tag>. Argument: dict root, app, spec.
*/}}
{{- define "flagship.image" -}}
{{- $v := .root.Values.image -}}
{{- $digest := "" -}}
{{- with .spec.image }}{{ $digest = .digest }}{{ end -}}
{{- if $digest -}}
{{- printf "%s/%s@%s" $v.repository .app $digest -}}
{{- else -}}
{{- printf "%s/%s:%s" $v.repository .app $v.tag -}}
{{- end -}}
{{- end }}

{{/*
Where a pod may run, from the values of its app (or of the migrations): priorityClassName,
nodeSelector, affinity, tolerations. Argument: those values. Renders pod spec fields at column 0.
*/}}
{{- define "flagship.placement" -}}
{{- with .priorityClassName }}
priorityClassName: {{ . | quote }}
{{- end }}
{{- with .nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/*
Who may reach the public ports: the ingress controller's pods (networkPolicy.ingressControllerNamespace
and ingressControllerPodSelector), and `helm test`'s pods (templates/tests). Argument: the root context.
*/}}
{{- define "flagship.ingressControllerPeers" -}}
{{- $np := .Values.networkPolicy -}}
- namespaceSelector:
    matchLabels:
      kubernetes.io/metadata.name: {{ $np.ingressControllerNamespace | quote }}
  {{- with $np.ingressControllerPodSelector }}
  podSelector:
    matchLabels:
      {{- toYaml . | nindent 6 }}
  {{- end }}
- podSelector:
    matchLabels:
      app.kubernetes.io/instance: {{ .Release.Name }}
      app.kubernetes.io/component: helm-test
{{- end }}

{{/*
NetworkPolicy egress rules of a list of destinations (networkPolicy.egress.*): each {ipBlocks,
namespaces, podSelector, ports} one rule. Argument: dict destinations, protocols (default TCP).
*/}}
{{- define "flagship.egressRules" -}}
{{- $protocols := default (list "TCP") .protocols -}}
{{- range $d := .destinations }}
- to:
    {{- range $b := $d.ipBlocks }}
    - ipBlock:
        cidr: {{ $b.cidr | quote }}
        {{- with $b.except }}
        except: {{ toJson . }}
        {{- end }}
    {{- end }}
    {{- if $d.namespaces }}
    {{- range $ns := $d.namespaces }}
    - namespaceSelector:
        matchLabels:
          kubernetes.io/metadata.name: {{ $ns | quote }}
      {{- with $d.podSelector }}
      podSelector:
        matchLabels:
          {{- toYaml . | nindent 10 }}
      {{- end }}
    {{- end }}
    {{- else if $d.podSelector }}
    - podSelector:
        matchLabels:
          {{- toYaml $d.podSelector | nindent 10 }}
    {{- end }}
  ports:
    {{- range $port := $d.ports }}
    {{- range $p := $protocols }}
    - { port: {{ $port }}, protocol: {{ $p }} }
    {{- end }}
    {{- end }}
{{- end }}
{{- end }}

{{/*
OTEL_RESOURCE_ATTRIBUTES of a map: key=value pairs, comma-separated, in key order.
*/}}
{{- define "flagship.resourceAttributes" -}}
{{- $pairs := list -}}
{{- range $k := keys . | sortAlpha -}}
{{- $pairs = append $pairs (printf "%s=%s" $k (index $ $k | toString)) -}}
{{- end -}}
{{- join "," $pairs -}}
{{- end }}

{{/*
Where DATABASE_URL comes from when it is a Secret's: the workload's own databaseUrlSecret (a
Postgres role per app; for orep-server the instance's, else orepServer's), else
secrets.existingSecret's DATABASE_URL unless postgres.url gives it as a value. Renders the
secretKeyRef's inline map, or nothing. Argument: dict root, spec (the workload's values), instance
(orep-server only).
*/}}
{{- define "flagship.databaseUrlSecret" -}}
{{- $v := .root.Values -}}
{{- $own := dict -}}
{{- with .spec.databaseUrlSecret }}{{ $own = . }}{{ end -}}
{{- with .instance }}{{ with .databaseUrlSecret }}{{ $own = . }}{{ end }}{{ end -}}
{{- if $own.name -}}
{ name: {{ $own.name | quote }}, key: {{ default "DATABASE_URL" $own.key | quote }} }
{{- else if and $v.secrets.existingSecret (not $v.postgres.url) -}}
{ name: {{ $v.secrets.existingSecret | quote }}, key: DATABASE_URL }
{{- end -}}
{{- end }}

{{/* Where the Postgres CA bundle (postgres.tls.caSecret) is mounted in every pod that connects. */}}
{{- define "flagship.databaseCaDir" -}}/etc/flagship/postgres-ca{{- end }}

{{/*
DATABASE_SSL_MODE and DATABASE_SSL_CA_FILE from postgres.tls, as YAML lines of a map (a ConfigMap's
data; the migration Job turns them into env entries). Refuses what the apps would refuse at start-up
anyway, so helm says it before a pod crash-loops. Argument: the root context.
*/}}
{{- define "flagship.databaseTlsVars" -}}
{{- $tls := .Values.postgres.tls | default dict -}}
{{- $ca := $tls.caSecret | default dict -}}
{{- if and (eq (default "" $tls.mode) "verify-ca") (not $ca.name) -}}
{{- fail "postgres.tls.mode verify-ca needs postgres.tls.caSecret (the CA that signed the server certificate)" -}}
{{- end -}}
{{- if and (eq (default "" $tls.mode) "disable") $ca.name -}}
{{- fail "postgres.tls.caSecret is set but postgres.tls.mode is disable" -}}
{{- end -}}
{{- with $tls.mode }}
DATABASE_SSL_MODE: {{ . | quote }}
{{- end }}
{{- if $ca.name }}
DATABASE_SSL_CA_FILE: {{ printf "%s/ca.crt" (include "flagship.databaseCaDir" .) | quote }}
{{- end }}
{{- end }}

{{/* The CA bundle's volume (pod spec volumes list item), or nothing. Argument: the root context. */}}
{{- define "flagship.databaseCaVolume" -}}
{{- $ca := (.Values.postgres.tls | default dict).caSecret | default dict -}}
{{- if $ca.name }}
- name: postgres-ca
  secret:
    secretName: {{ $ca.name | quote }}
    items:
      - { key: {{ default "ca.crt" $ca.key | quote }}, path: ca.crt }
    # 0444 (in decimal, as YAML 1.1 and 1.2 read it alike): certificates, not keys, readable by the
    # app's user whatever its uid.
    defaultMode: 292
{{- end }}
{{- end }}

{{/* The CA bundle's read-only mount (container volumeMounts list item), or nothing. Argument: the root context. */}}
{{- define "flagship.databaseCaVolumeMount" -}}
{{- $ca := (.Values.postgres.tls | default dict).caSecret | default dict -}}
{{- if $ca.name }}
- name: postgres-ca
  mountPath: {{ include "flagship.databaseCaDir" . }}
  readOnly: true
{{- end }}
{{- end }}
