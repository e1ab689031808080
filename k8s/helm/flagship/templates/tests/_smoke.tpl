{{/*
One `helm test` pod: calls one app through its Service, as a client in the namespace would, and
fails naming the call that did not answer as expected. CHECKS lists the calls: its health, then a
first call of its API. Runs the management-api image (it has node), under the restricted Pod
Security Standard like the apps. Argument: dict root, app, component, port, checks (JSON), instance
(orep-server only).
*/}}
{{- define "flagship.testPod" -}}
{{- $v := .root.Values -}}
{{- $fullname := include "flagship.fullname" .root -}}
apiVersion: v1
kind: Pod
metadata:
  name: {{ $fullname }}-test-{{ .component }}
  labels:
    {{- include "flagship.commonLabels" .root | nindent 4 }}
    app.kubernetes.io/name: {{ .app }}
    app.kubernetes.io/component: helm-test
  annotations:
    helm.sh/hook: test
    # A failed pod stays for `kubectl logs`; the next `helm test` replaces it.
    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
spec:
  restartPolicy: Never
  automountServiceAccountToken: false
  {{- with $v.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    {{- toYaml $v.podSecurityContext | nindent 4 }}
  containers:
    - name: smoke
      image: {{ include "flagship.image" (dict "root" .root "app" "management-api" "spec" (index $v.apps "management-api")) | quote }}
      imagePullPolicy: {{ $v.image.pullPolicy }}
      command:
        - node
        - -e
        - |
          {{- include "flagship.testScript" . | nindent 10 }}
      env:
        - name: TARGET
          value: {{ printf "http://%s-%s:%d" $fullname .component (int .port) | quote }}
        - name: CHECKS
          value: {{ .checks | quote }}
        {{- with .instance }}
        - name: OREP_AUTH_TOKEN
          valueFrom:
            secretKeyRef: { name: {{ $v.secrets.existingSecret | quote }}, key: {{ .authTokenKey | quote }} }
        {{- end }}
      resources:
        requests: { cpu: 10m, memory: 64Mi }
        limits: { memory: 128Mi }
      securityContext:
        allowPrivilegeEscalation: false
        readOnlyRootFilesystem: true
        runAsNonRoot: true
        capabilities:
          drop: ["ALL"]
{{- end }}

{{/* The test pods' program: each check of CHECKS in order, exit 1 at the first unexpected status. */}}
{{- define "flagship.testScript" -}}
const target = process.env.TARGET;
const run = async () => {
  for (const check of JSON.parse(process.env.CHECKS)) {
    const headers = { 'content-type': 'application/json' };
    if (check.auth) headers.authorization = 'Bearer ' + process.env[check.auth];
    const method = check.method || 'GET';
    const res = await fetch(target + check.path, { method, headers, body: check.body, signal: AbortSignal.timeout(10000) });
    const text = await res.text();
    if (res.status !== check.status) {
      console.error(method + ' ' + target + check.path + ': ' + res.status + ', expected ' + check.status + (check.why ? ' (' + check.why + ')' : '') + ': ' + text.slice(0, 300));
      process.exit(1);
    }
    console.log(method + ' ' + check.path + ': ' + res.status);
  }
};
run().catch((err) => {
  console.error(target + ': ' + err.message);
  process.exit(1);
});
{{- end }}
