{{/*
One app's ConfigMap, Deployment, Service, HorizontalPodAutoscaler and PodDisruptionBudget.
Argument: dict root, app (the image), component (the resource suffix), port, spec (the app's
values), instance (orep-server only), replicas.
*/}}
{{- define "flagship.workload" -}}
{{- $root := .root -}}
{{- $v := $root.Values -}}
{{- $name := printf "%s-%s" (include "flagship.fullname" $root) .component -}}
{{- $config := include "flagship.configData" . -}}
{{- $secretEnv := include "flagship.secretEnv" . -}}
{{- $ctx := . -}}
{{- $minReplicas := .replicas -}}
{{- $maxReplicas := 0 -}}
{{- if .spec.autoscaling.enabled -}}
{{- $minReplicas = .spec.autoscaling.minReplicas -}}
{{- $maxReplicas = .spec.autoscaling.maxReplicas -}}
{{- if gt .spec.autoscaling.minReplicas .spec.autoscaling.maxReplicas -}}
{{- fail (printf "%s: autoscaling.minReplicas is above maxReplicas" .component) -}}
{{- end -}}
{{- /* An orep-server instance's own replicas are its floor (orepServer.autoscaling is shared by all). */ -}}
{{- if and .instance .instance.replicas -}}
{{- $minReplicas = .instance.replicas -}}
{{- $maxReplicas = max $maxReplicas .instance.replicas -}}
{{- end -}}
{{- end }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ $name }}
  labels:
    {{- include "flagship.commonLabels" $root | nindent 4 }}
    app.kubernetes.io/name: {{ .app }}
    app.kubernetes.io/component: {{ .component }}
data:
  {{- $config | nindent 2 }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $name }}
  labels:
    {{- include "flagship.commonLabels" $root | nindent 4 }}
    app.kubernetes.io/name: {{ .app }}
    app.kubernetes.io/component: {{ .component }}
spec:
  {{- if not .spec.autoscaling.enabled }}
  replicas: {{ .replicas }}
  {{- end }}
  revisionHistoryLimit: 5
  strategy:
    type: RollingUpdate
    rollingUpdate:
      maxUnavailable: 0
      maxSurge: 1
  selector:
    matchLabels:
      {{- include "flagship.selectorLabels" . | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "flagship.commonLabels" $root | nindent 8 }}
        app.kubernetes.io/name: {{ .app }}
        app.kubernetes.io/component: {{ .component }}
        flagship.io/database-client: "true"
        {{- with .spec.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      annotations:
        # A changed ConfigMap rolls the pods (secrets rotate without a restart: see k8s/README.md).
        checksum/config: {{ $config | sha256sum }}
        {{- with .spec.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      serviceAccountName: {{ include "flagship.serviceAccountName" (dict "root" $root "app" .app "spec" .spec) }}
      automountServiceAccountToken: false
      {{- with $v.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        {{- toYaml $v.podSecurityContext | nindent 8 }}
      {{- with include "flagship.placement" .spec }}
      {{- . | nindent 6 }}
      {{- end }}
      {{- /* Spread replicated workloads across zones and nodes unless the values say how (or [] for not). */}}
      {{- if hasKey .spec "topologySpreadConstraints" }}
      {{- with .spec.topologySpreadConstraints }}
      topologySpreadConstraints:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- else if gt (int $minReplicas) 1 }}
      # ScheduleAnyway: a preference, so a cluster of one zone (or too few nodes) still schedules
      # every pod; pod-template-hash counts only the pods of the current rollout.
      topologySpreadConstraints:
        {{- range $key := list "topology.kubernetes.io/zone" "kubernetes.io/hostname" }}
        - maxSkew: 1
          topologyKey: {{ $key }}
          whenUnsatisfiable: ScheduleAnyway
          labelSelector:
            matchLabels:
              {{- include "flagship.selectorLabels" $ctx | nindent 14 }}
          matchLabelKeys: ["pod-template-hash"]
        {{- end }}
      {{- end }}
      {{- with .spec.sidecars }}
      # Native sidecars (restartPolicy Always): they start before the app and stop after it, so a
      # proxy the app talks through outlives its drain.
      initContainers:
        {{- range . }}
        - restartPolicy: Always
          {{- toYaml . | nindent 10 }}
        {{- end }}
      {{- end }}
      # SHUTDOWN_GRACE_MS of draining after the preStop pause (the gateway's follows its
      # PROVIDER_TOTAL_TIMEOUT_MS: flagship.shutdownGraceMs), plus a margin before SIGKILL.
      terminationGracePeriodSeconds: {{ add $v.preStopSeconds (div (add (int (include "flagship.shutdownGraceMs" .)) 999) 1000) 5 }}
      containers:
        - name: {{ .app }}
          image: {{ include "flagship.image" . | quote }}
          imagePullPolicy: {{ $v.image.pullPolicy }}
          ports:
            - name: http
              containerPort: {{ .port }}
              protocol: TCP
            # /metrics and the detailed /readyz; no Ingress routes it.
            - name: metrics
              containerPort: {{ $v.metricsPort }}
              protocol: TCP
          envFrom:
            - configMapRef:
                name: {{ $name }}
            {{- with .spec.extraEnvFrom }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          {{- if or $secretEnv .spec.extraEnv }}
          env:
            {{- with $secretEnv }}
            {{- . | trim | nindent 12 }}
            {{- end }}
            {{- with .spec.extraEnv }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          {{- end }}
          startupProbe:
            httpGet: { path: /healthz, port: http }
            periodSeconds: 2
            failureThreshold: 30
          livenessProbe:
            httpGet: { path: /healthz, port: http }
            periodSeconds: 10
            timeoutSeconds: 2
            failureThreshold: 3
          readinessProbe:
            httpGet: { path: /readyz, port: http }
            periodSeconds: 5
            timeoutSeconds: 2
            failureThreshold: 2
          {{- if $v.preStopSeconds }}
          # The kubelet's own sleep, no shell or sleep binary in the image needed. (0: no hook, as a
          # sleep of 0 s is refused before Kubernetes 1.33.)
          lifecycle:
            preStop:
              sleep:
                seconds: {{ $v.preStopSeconds }}
          {{- end }}
          resources:
            {{- toYaml .spec.resources | nindent 12 }}
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            runAsNonRoot: true
            capabilities:
              drop: ["ALL"]
          volumeMounts:
            - name: tmp
              mountPath: /tmp
            {{- include "flagship.databaseCaVolumeMount" $root | nindent 12 }}
            {{- with .spec.extraVolumeMounts }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
      volumes:
        - name: tmp
          emptyDir:
            medium: Memory
            sizeLimit: 16Mi
        {{- include "flagship.databaseCaVolume" $root | nindent 8 }}
        {{- with .spec.extraVolumes }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ $name }}
  labels:
    {{- include "flagship.commonLabels" $root | nindent 4 }}
    app.kubernetes.io/name: {{ .app }}
    app.kubernetes.io/component: {{ .component }}
spec:
  type: ClusterIP
  selector:
    {{- include "flagship.selectorLabels" . | nindent 4 }}
  ports:
    - name: http
      port: {{ .port }}
      targetPort: http
      protocol: TCP
    - name: metrics
      port: {{ $v.metricsPort }}
      targetPort: metrics
      protocol: TCP
{{- $keda := and .spec.autoscaling.enabled .spec.autoscaling.keda .spec.autoscaling.keda.enabled }}
{{- if $keda }}
---
# KEDA scales it (and creates the HorizontalPodAutoscaler itself: the chart renders none, as two
# autoscalers on one Deployment would fight): CPU as without KEDA, plus the triggers of the values.
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata:
  name: {{ $name }}
  labels:
    {{- include "flagship.commonLabels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ .component }}
spec:
  scaleTargetRef:
    name: {{ $name }}
  minReplicaCount: {{ $minReplicas }}
  maxReplicaCount: {{ $maxReplicas }}
  pollingInterval: {{ default 30 .spec.autoscaling.keda.pollingInterval }}
  cooldownPeriod: {{ default 300 .spec.autoscaling.keda.cooldownPeriod }}
  triggers:
    - type: cpu
      metricType: Utilization
      metadata:
        value: {{ .spec.autoscaling.targetCPUUtilizationPercentage | toString | quote }}
    {{- with .spec.autoscaling.keda.triggers }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- else if .spec.autoscaling.enabled }}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ $name }}
  labels:
    {{- include "flagship.commonLabels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ .component }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ $name }}
  minReplicas: {{ $minReplicas }}
  maxReplicas: {{ $maxReplicas }}
  metrics:
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: {{ .spec.autoscaling.targetCPUUtilizationPercentage }}
    {{- /* More metrics (Pods, Object, External: a metrics adapter serves them); the HPA follows the one asking for most replicas. */}}
    {{- with .spec.autoscaling.metrics }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end }}
{{- /* A PDB on a single replica would block every node drain. */}}
{{- if gt (int $minReplicas) 1 }}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ $name }}
  labels:
    {{- include "flagship.commonLabels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ .component }}
spec:
  minAvailable: {{ .spec.pdb.minAvailable }}
  # A pod that is not ready serves nothing: evicting it never costs availability, and under the
  # default (IfHealthyBudget) a crash-looping pod would block every node drain.
  unhealthyPodEvictionPolicy: AlwaysAllow
  selector:
    matchLabels:
      {{- include "flagship.selectorLabels" . | nindent 6 }}
{{- end }}
{{- end }}
