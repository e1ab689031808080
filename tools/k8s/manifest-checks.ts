/**
 * Checks of a set of rendered Kubernetes objects (a chart rendering or a kustomize build) against
 * the apps' own code. Each returns a list of problems, each naming the object and what is wrong, so
 * a failing test says exactly what to fix.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import Ajv from 'ajv';
import { type AppContract, defaultOf, requiredVariables } from './app-contracts';
import { unknownFields } from './unknown-fields';

/** Secrets whose apps check their shape at start-up get a placeholder of that shape. */
const SHAPED_PLACEHOLDERS: Record<string, string> = {
  WEBHOOK_SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
};

export { unknownFields };

export type Obj = Record<string, any>;

/** apps/ai-gateway's gateway.pipeline.ts: requests still under way are cut this long before SHUTDOWN_GRACE_MS ends. */
const GATEWAY_CUT_MARGIN_MS = 3000;

export interface ManifestSet {
  name: string;
  objects: Obj[];
}

export interface Workload {
  deployment: Obj;
  app: string;
  component: string;
  container: Obj;
  /** The container's environment as the pod would see it; secret values are placeholders. */
  env: Record<string, string>;
  /** Variables from a Secret (their values are not known here). */
  fromSecret: Set<string>;
  /** Variables from a secretKeyRef marked optional: they may be absent at run time. */
  optional: Set<string>;
  problems: string[];
}

export const ofKind = (set: ManifestSet, kind: string): Obj[] => set.objects.filter((o) => o['kind'] === kind);
const id = (o: Obj) => `${o['kind']}/${o['metadata']?.name}`;

/** kubernetes-models class of an object, by apiVersion and kind; undefined for custom resources. */
export function modelClass(apiVersion: string, kind: string): (new (o: Obj) => { validate(): void }) | undefined {
  try {
    // kubernetes-models lays its classes out by apiVersion: v1, apps/v1, networking.k8s.io/v1...
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return (require(`kubernetes-models/${apiVersion}`) as Record<string, new (o: Obj) => { validate(): void }>)[kind];
  } catch {
    return undefined;
  }
}

/**
 * The custom resources the chart renders, which kubernetes-models does not know: the fields of
 * their CRDs that the chart may use (Gateway API v1 HTTPRoute; the Prometheus Operator's
 * ServiceMonitor and PodMonitor), required ones required, and nothing else (a misspelt field is
 * refused, as the API server's strict field validation would).
 */
const str = { type: 'string', minLength: 1 };
const strMap = { type: 'object', additionalProperties: { type: 'string' } };
const strict = (properties: Record<string, unknown>, required: string[] = []) => ({ type: 'object', additionalProperties: false, required, properties });
const metadata = strict({ name: str, namespace: str, labels: strMap, annotations: strMap }, ['name']);
const labelSelector = strict({ matchLabels: strMap, matchExpressions: { type: 'array', items: strict({ key: str, operator: { enum: ['In', 'NotIn', 'Exists', 'DoesNotExist'] }, values: { type: 'array', items: { type: 'string' } } }, ['key', 'operator']) } });
const scrapeEndpoint = strict({ port: str, path: { type: 'string', pattern: '^/' }, interval: { type: 'string', pattern: '^[0-9]+(ms|s|m|h)$' }, scrapeTimeout: str, scheme: { enum: ['http', 'https'] }, honorLabels: { type: 'boolean' } }, ['port']);
const customResource = (apiVersion: string, kind: string, spec: object) =>
  strict({ apiVersion: { const: apiVersion }, kind: { const: kind }, metadata, spec }, ['apiVersion', 'kind', 'metadata', 'spec']);
const ajv = new Ajv({ allErrors: true, strict: true });
const CUSTOM_RESOURCES: Record<string, ReturnType<Ajv['compile']>> = {
  'gateway.networking.k8s.io/v1 HTTPRoute': ajv.compile(
    customResource('gateway.networking.k8s.io/v1', 'HTTPRoute', strict({
      parentRefs: { type: 'array', minItems: 1, items: strict({ group: { type: 'string' }, kind: str, namespace: str, name: str, sectionName: str, port: { type: 'integer' } }, ['name']) },
      hostnames: { type: 'array', items: { type: 'string', pattern: '^(\\*\\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$' } },
      rules: {
        type: 'array',
        minItems: 1,
        items: strict({
          matches: { type: 'array', items: strict({ path: strict({ type: { enum: ['Exact', 'PathPrefix', 'RegularExpression'] }, value: { type: 'string', pattern: '^/' } }, ['type', 'value']) }) },
          // A Service backend needs its (Service) port number.
          backendRefs: { type: 'array', minItems: 1, items: strict({ group: { type: 'string' }, kind: str, name: str, namespace: str, port: { type: 'integer', minimum: 1, maximum: 65535 }, weight: { type: 'integer' } }, ['name', 'port']) },
        }),
      },
    }, ['parentRefs', 'rules'])),
  ),
  'keda.sh/v1alpha1 ScaledObject': ajv.compile(
    customResource('keda.sh/v1alpha1', 'ScaledObject', strict({
      scaleTargetRef: strict({ apiVersion: str, kind: str, name: str }, ['name']),
      minReplicaCount: { type: 'integer', minimum: 0 },
      maxReplicaCount: { type: 'integer', minimum: 1 },
      pollingInterval: { type: 'integer', minimum: 1 },
      cooldownPeriod: { type: 'integer', minimum: 1 },
      triggers: {
        type: 'array',
        minItems: 1,
        items: strict({ type: str, name: str, metricType: { enum: ['AverageValue', 'Value', 'Utilization'] }, metadata: strMap, authenticationRef: strict({ name: str, kind: str }, ['name']) }, ['type', 'metadata']),
      },
    }, ['scaleTargetRef', 'triggers'])),
  ),
  'monitoring.coreos.com/v1 ServiceMonitor': ajv.compile(
    customResource('monitoring.coreos.com/v1', 'ServiceMonitor', strict({ selector: labelSelector, namespaceSelector: strict({ any: { type: 'boolean' }, matchNames: { type: 'array' } }), endpoints: { type: 'array', minItems: 1, items: scrapeEndpoint } }, ['selector', 'endpoints'])),
  ),
  'monitoring.coreos.com/v1 PodMonitor': ajv.compile(
    customResource('monitoring.coreos.com/v1', 'PodMonitor', strict({ selector: labelSelector, namespaceSelector: strict({ any: { type: 'boolean' }, matchNames: { type: 'array' } }), podMetricsEndpoints: { type: 'array', minItems: 1, items: scrapeEndpoint } }, ['selector', 'podMetricsEndpoints'])),
  ),
};

/**
 * The Prometheus Operator's resources against its CRDs' schemas (@kubernetes-models/prometheus-operator,
 * through prometheus-operator-check.mjs: the package is ES modules only), unknown fields included.
 */
export function prometheusOperatorProblems(objects: Obj[]): string[] {
  if (objects.length === 0) return [];
  const out = spawnSync(process.execPath, [join(__dirname, 'prometheus-operator-check.mjs')], { input: JSON.stringify(objects), encoding: 'utf8', timeout: 60_000 });
  if (out.status !== 0) throw new Error(`prometheus-operator-check.mjs failed: ${out.stderr}`);
  return JSON.parse(out.stdout) as string[];
}

/**
 * Every object against the Kubernetes API schema (kubernetes-models); the Prometheus Operator's
 * against its CRDs (prometheusOperatorProblems); other custom resources by hand.
 */
export function schemaProblems(set: ManifestSet): string[] {
  const problems: string[] = [];
  const operator: Obj[] = [];
  for (const o of set.objects) {
    if (typeof o['apiVersion'] !== 'string' || typeof o['kind'] !== 'string' || typeof o['metadata']?.name !== 'string') {
      problems.push(`${set.name}: an object without apiVersion, kind or metadata.name: ${JSON.stringify(o).slice(0, 120)}`);
      continue;
    }
    // Services (and so every name here) must be DNS labels: 63 characters at most.
    if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(o['metadata'].name)) {
      problems.push(`${set.name}: ${id(o)}: the name is not a DNS label of at most 63 characters`);
    }
    const custom = CUSTOM_RESOURCES[`${o['apiVersion']} ${o['kind']}`];
    if (custom) {
      if (!custom(o)) problems.push(...(custom.errors ?? []).map((e) => `${set.name}: ${id(o)}: ${e.instancePath || '/'} ${e.message}${e.params['additionalProperty'] ? ` (${String(e.params['additionalProperty'])})` : ''}`));
      continue;
    }
    if (String(o['apiVersion']).startsWith('monitoring.coreos.com/')) {
      operator.push(o);
      continue;
    }
    const Model = modelClass(o['apiVersion'], o['kind']);
    if (!Model) {
      problems.push(`${set.name}: no Kubernetes schema for ${o['apiVersion']} ${o['kind']}`);
      continue;
    }
    try {
      new Model(o).validate();
    } catch (err) {
      problems.push(`${set.name}: ${id(o)}: ${(err as Error).message}`);
    }
    for (const path of unknownFields(Model, o)) problems.push(`${set.name}: ${id(o)}: unknown field ${path}`);
  }
  problems.push(...prometheusOperatorProblems(operator).map((p) => `${set.name}: ${p}`));
  return problems;
}

/** The environment a Deployment's first container gets, resolved through the set's ConfigMaps. */
export function workloads(set: ManifestSet): Workload[] {
  return ofKind(set, 'Deployment').map((d) => {
    const pod = d['spec']?.template;
    const container = pod?.spec?.containers?.[0] ?? {};
    const w: Workload = {
      deployment: d,
      app: pod?.metadata?.labels?.['app.kubernetes.io/name'],
      component: pod?.metadata?.labels?.['app.kubernetes.io/component'],
      container,
      env: {},
      fromSecret: new Set(),
      optional: new Set(),
      problems: [],
    };
    for (const from of container['envFrom'] ?? []) {
      if (from.configMapRef) {
        const cm = ofKind(set, 'ConfigMap').find((c) => c['metadata'].name === from.configMapRef.name);
        if (!cm) w.problems.push(`${set.name}: ${id(d)} reads ConfigMap ${from.configMapRef.name}, which is not in the manifests`);
        else Object.assign(w.env, cm['data'] ?? {});
      } else {
        w.problems.push(`${set.name}: ${id(d)} takes a whole Secret through envFrom: which variables it provides cannot be checked; name them in env`);
      }
    }
    for (const e of container['env'] ?? []) {
      if (e.value !== undefined) w.env[e.name] = String(e.value);
      else if (e.valueFrom?.secretKeyRef) {
        w.env[e.name] = SHAPED_PLACEHOLDERS[e.name] ?? `placeholder-${e.valueFrom.secretKeyRef.key}`;
        w.fromSecret.add(e.name);
        if (e.valueFrom.secretKeyRef.optional) w.optional.add(e.name);
      } else if (e.valueFrom?.configMapKeyRef) {
        const cm = ofKind(set, 'ConfigMap').find((c) => c['metadata'].name === e.valueFrom.configMapKeyRef.name);
        const v = cm?.['data']?.[e.valueFrom.configMapKeyRef.key];
        if (v === undefined) w.problems.push(`${set.name}: ${id(d)} ${e.name} names a ConfigMap key that does not exist`);
        else w.env[e.name] = v;
      } else w.problems.push(`${set.name}: ${id(d)} ${e.name} has a source this check does not know`);
    }
    return w;
  });
}

/**
 * Every variable the app requires at start-up is provided, and its own validation (load*Config,
 * which also applies rules such as "IDP_MODE=dev is refused in production") accepts the
 * environment. A Secret's value is unknown here, so "X is invalid" for a variable from a Secret is
 * not counted; "X is required" always is.
 */
export function startupProblems(set: ManifestSet, w: Workload, contract: AppContract): { problems: string[]; config?: Record<string, unknown> } {
  const where = `${set.name}: ${w.component} (${w.app})`;
  const problems: string[] = [];
  for (const name of requiredVariables(contract, w.env['NODE_ENV'])) {
    if (!(name in w.env)) problems.push(`${where} requires ${name} at start-up; the manifests do not provide it`);
    else if (w.optional.has(name)) problems.push(`${where} requires ${name}; its secretKeyRef is optional, so it may be missing`);
  }
  // Not required by the schemas (they default to a local server), but a pod has no local Postgres or Redis.
  for (const name of ['DATABASE_URL', 'REDIS_URL']) {
    if (!(name in w.env)) problems.push(`${where} gets no ${name}: it would try 127.0.0.1`);
  }
  const host = contract.portVariable === 'OREP_PORT' ? 'OREP_HOST' : 'HOST';
  if (w.env[host] !== '0.0.0.0') problems.push(`${where}: ${host} must be 0.0.0.0 to be reachable in a pod (is ${w.env[host]})`);
  // A Secret's value is unknown here: stand in the app's own default where it has a usable one
  // (a URL for DATABASE_URL), so the rest of its validation runs.
  const env = { ...w.env };
  for (const name of w.fromSecret) {
    const d = defaultOf(contract, name);
    if (d !== undefined && d !== null && d !== '') env[name] = String(d);
  }
  try {
    const config = contract.load(env);
    return { problems, config };
  } catch (err) {
    const message = (err as Error).message.replace(/^invalid configuration: /, '');
    const parts = message.split('; ').filter((p) => {
      const m = /^([A-Z0-9_]+) is invalid/.exec(p);
      return !(m && w.fromSecret.has(m[1]));
    });
    if (parts.length > 0) problems.push(`${where} refuses to start: ${parts.join('; ')}`);
    return { problems };
  }
}

/**
 * Variables the manifests give an app that its schema does not read (a typo, or a variable that
 * moved); a secret the app's code reads by name (SecretStore) counts as read.
 */
export function unknownVariables(set: ManifestSet, w: Workload, contract: AppContract): string[] {
  return Object.keys(w.env)
    .filter((n) => !(n in contract.specs) && !(w.fromSecret.has(n) && contract.mentions(n)))
    .map((n) => `${set.name}: ${w.component} (${w.app}) is given ${n}, which apps/${w.app}/src/env.schema.ts does not read`);
}

/** Port, probes, graceful termination and the security context of one workload. */
export function podProblems(set: ManifestSet, w: Workload, contract: AppContract, routes: Set<string> | undefined, shipped: boolean): string[] {
  const where = `${set.name}: ${w.component} (${w.app})`;
  const problems: string[] = [];
  const c = w.container;
  const httpPort = (c['ports'] ?? []).find((p: Obj) => p.name === 'http');
  if (!httpPort) return [`${where}: no container port named http`];
  const configured = Number(w.env[contract.portVariable] ?? defaultOf(contract, contract.portVariable));
  if (httpPort.containerPort !== configured) problems.push(`${where}: containerPort ${httpPort.containerPort} but the app listens on ${contract.portVariable}=${configured}`);
  if (shipped && httpPort.containerPort !== defaultOf(contract, contract.portVariable)) {
    problems.push(`${where}: containerPort ${httpPort.containerPort} differs from the app's default ${contract.portVariable} ${String(defaultOf(contract, contract.portVariable))}`);
  }
  // The internal port (/metrics, the detailed /readyz) where the app opens it.
  const metricsPort = (c['ports'] ?? []).find((p: Obj) => p.name === 'metrics');
  if (!metricsPort) problems.push(`${where}: no container port named metrics (METRICS_PORT: /metrics and the detailed /readyz)`);
  else if (String(metricsPort.containerPort) !== w.env['METRICS_PORT']) {
    problems.push(`${where}: containerPort metrics ${metricsPort.containerPort} but the app's METRICS_PORT is ${String(w.env['METRICS_PORT'])}`);
  }
  const expected: Record<string, string> = { livenessProbe: '/healthz', readinessProbe: '/readyz', startupProbe: '/healthz' };
  for (const [probe, path] of Object.entries(expected)) {
    const get = c[probe]?.httpGet;
    if (!get) {
      problems.push(`${where}: no ${probe} (httpGet)`);
      continue;
    }
    if (get.path !== path) problems.push(`${where}: ${probe} requests ${get.path}, expected ${path}`);
    if (routes && !routes.has(get.path)) problems.push(`${where}: ${probe} requests ${get.path}, which the app does not serve (GET routes: ${[...routes].sort().join(', ')})`);
    if (get.port !== 'http' && get.port !== httpPort.containerPort) problems.push(`${where}: ${probe} on port ${get.port}, not the app's`);
  }
  const graceMs = Number(w.env['SHUTDOWN_GRACE_MS'] ?? defaultOf(contract, 'SHUTDOWN_GRACE_MS'));
  // The kubelet's sleep action, or a `sleep` command (an overlay's, an older chart's).
  const preStop = c['lifecycle']?.preStop;
  const preStopMs = typeof preStop?.sleep?.seconds === 'number'
    ? preStop.sleep.seconds * 1000
    : Array.isArray(preStop?.exec?.command) && preStop.exec.command[0] === 'sleep' ? Number(preStop.exec.command[1]) * 1000 : 0;
  const termination = w.deployment['spec'].template.spec.terminationGracePeriodSeconds;
  if (typeof termination !== 'number' || termination * 1000 < graceMs + preStopMs) {
    problems.push(`${where}: terminationGracePeriodSeconds ${termination} is shorter than the preStop pause (${preStopMs} ms) plus SHUTDOWN_GRACE_MS (${graceMs})`);
  }
  // The gateway cuts what is still under way 3 s before its grace ends: its longest request must fit before that.
  if (contract.specs['PROVIDER_TOTAL_TIMEOUT_MS']) {
    const longestMs = Number(w.env['PROVIDER_TOTAL_TIMEOUT_MS'] ?? defaultOf(contract, 'PROVIDER_TOTAL_TIMEOUT_MS'));
    if (graceMs < longestMs + GATEWAY_CUT_MARGIN_MS) {
      problems.push(`${where}: SHUTDOWN_GRACE_MS ${graceMs} does not cover the longest request (PROVIDER_TOTAL_TIMEOUT_MS ${longestMs}) plus ${GATEWAY_CUT_MARGIN_MS} ms: rollouts would cut requests`);
    }
  }
  return [...problems, ...securityProblems(where, w.deployment['spec'].template.spec)];
}

export function securityProblems(where: string, podSpec: Obj): string[] {
  const problems: string[] = [];
  if (podSpec['securityContext']?.runAsNonRoot !== true) problems.push(`${where}: pod securityContext.runAsNonRoot is not true`);
  // Native sidecars are init containers; the restricted profile covers them as well.
  for (const c of [...(podSpec['initContainers'] ?? []), ...(podSpec['containers'] ?? [])]) {
    const sc = c.securityContext ?? {};
    if (sc.readOnlyRootFilesystem !== true) problems.push(`${where}/${c.name}: root filesystem not read-only`);
    if (sc.allowPrivilegeEscalation !== false) problems.push(`${where}/${c.name}: allowPrivilegeEscalation is not false`);
    if (!(sc.capabilities?.drop ?? []).includes('ALL')) problems.push(`${where}/${c.name}: capabilities not dropped (drop: [ALL])`);
    if (!c.resources?.requests?.cpu || !c.resources?.requests?.memory) problems.push(`${where}/${c.name}: no cpu and memory requests`);
    if (!c.resources?.limits?.memory) problems.push(`${where}/${c.name}: no memory limit`);
  }
  return problems;
}

export const matchesSelector = (selector: Obj | undefined, labels: Record<string, string>): boolean => {
  return matches(selector, labels);
};

const matches = (selector: Obj | undefined, labels: Record<string, string>): boolean => {
  if (!selector) return false;
  for (const [k, v] of Object.entries(selector['matchLabels'] ?? {})) if (labels[k] !== v) return false;
  for (const e of selector['matchExpressions'] ?? []) {
    const has = e.key in labels;
    if (e.operator === 'In' && !(has && e.values.includes(labels[e.key]))) return false;
    if (e.operator === 'NotIn' && has && e.values.includes(labels[e.key])) return false;
    if (e.operator === 'Exists' && !has) return false;
    if (e.operator === 'DoesNotExist' && has) return false;
  }
  return true;
};

/** Each Deployment has a Service, an HPA or fixed replicas, a PDB when it runs several pods. */
export function wiringProblems(set: ManifestSet): string[] {
  const problems: string[] = [];
  for (const d of ofKind(set, 'Deployment')) {
    const labels = d['spec'].template.metadata.labels as Record<string, string>;
    if (!matches(d['spec'].selector, labels)) problems.push(`${set.name}: ${id(d)}: its selector does not match its pods`);
    const services = ofKind(set, 'Service').filter((s) => Object.entries(s['spec'].selector ?? {}).every(([k, v]) => labels[k] === v));
    if (services.length !== 1) problems.push(`${set.name}: ${id(d)} has ${services.length} Services, expected 1`);
    else if (!services[0]['spec'].ports.some((p: Obj) => p.targetPort === 'http')) problems.push(`${set.name}: ${id(services[0])} does not target the http port`);
    else if (!services[0]['spec'].ports.some((p: Obj) => p.name === 'metrics' && p.targetPort === 'metrics')) problems.push(`${set.name}: ${id(services[0])} has no metrics port (for the ServiceMonitor)`);
    const hpa = ofKind(set, 'HorizontalPodAutoscaler').find((h) => h['spec'].scaleTargetRef.name === d['metadata'].name);
    // KEDA's ScaledObject creates the HPA itself: never both on one Deployment.
    const scaled = ofKind(set, 'ScaledObject').find((h) => h['spec'].scaleTargetRef.name === d['metadata'].name);
    if (hpa && scaled) problems.push(`${set.name}: ${id(d)} has both an HPA and a ScaledObject, which would fight`);
    if (scaled) {
      if (!scaled['spec'].triggers.some((t: Obj) => t.type === 'cpu')) problems.push(`${set.name}: ${id(scaled)} does not scale on CPU`);
      if (scaled['spec'].minReplicaCount > scaled['spec'].maxReplicaCount) problems.push(`${set.name}: ${id(scaled)} minReplicaCount above maxReplicaCount`);
      if (typeof d['spec'].replicas === 'number') problems.push(`${set.name}: ${id(d)} sets replicas under a ScaledObject: each apply would reset the scale`);
    } else if (hpa) {
      if (!hpa['spec'].metrics?.some((m: Obj) => m.resource?.name === 'cpu')) problems.push(`${set.name}: ${id(hpa)} does not scale on CPU`);
      if (hpa['spec'].minReplicas > hpa['spec'].maxReplicas) problems.push(`${set.name}: ${id(hpa)} minReplicas above maxReplicas`);
    } else if (typeof d['spec'].replicas !== 'number') problems.push(`${set.name}: ${id(d)} has neither an HPA nor replicas`);
    const least = scaled ? scaled['spec'].minReplicaCount : hpa ? hpa['spec'].minReplicas : d['spec'].replicas;
    const pdb = ofKind(set, 'PodDisruptionBudget').find((p) => matches(p['spec'].selector, labels));
    if (least > 1 && !pdb) problems.push(`${set.name}: ${id(d)} runs ${least}+ pods without a PodDisruptionBudget`);
    if (pdb && least <= 1) problems.push(`${set.name}: ${id(pdb)} on a single pod blocks every node drain`);
  }
  return problems;
}

/**
 * Who may reach each pod, by the NetworkPolicies: 'anyone', 'namespace:<name>', 'same-namespace',
 * or 'pods:<labels>'. With no policy selecting a pod, 'anyone'.
 */
export function reachableFrom(set: ManifestSet, labels: Record<string, string>): Set<string> {
  const peers = new Set<string>();
  const policies = ofKind(set, 'NetworkPolicy').filter((p) => matches(p['spec'].podSelector, labels) || Object.keys(p['spec'].podSelector ?? {}).length === 0);
  if (policies.length === 0) return new Set(['anyone']);
  for (const p of policies) {
    for (const rule of p['spec'].ingress ?? []) {
      if (!rule.from || rule.from.length === 0) peers.add('anyone');
      for (const f of rule.from ?? []) {
        if (f.ipBlock) peers.add('anyone');
        else if (f.namespaceSelector) {
          const name = f.namespaceSelector.matchLabels?.['kubernetes.io/metadata.name'];
          peers.add(name ? `namespace:${name}` : 'anyone');
        } else if (f.podSelector && Object.keys(f.podSelector).length === 0) peers.add('same-namespace');
        // Keys sorted: kustomize reorders them, the chart may not.
        else if (f.podSelector) {
          const sel = (f.podSelector.matchLabels ?? f.podSelector) as Record<string, unknown>;
          peers.add(`pods:${JSON.stringify(Object.fromEntries(Object.keys(sel).sort().map((k) => [k, sel[k]])))}`);
        }
      }
    }
  }
  return peers;
}

/**
 * Where a pod may open connections, by the NetworkPolicies of the set: 'anything' when no policy
 * restricts its egress, else one entry per allowed destination and port, e.g.
 * 'ipBlock:0.0.0.0/0 except 10.0.0.0/8 TCP/443', 'namespace:kube-system pods:{"k8s-app":"kube-dns"} UDP/53'.
 */
export function egressOf(set: ManifestSet, labels: Record<string, string>): string[] {
  const policies = ofKind(set, 'NetworkPolicy').filter((p) => (p['spec'].policyTypes ?? []).includes('Egress') && matches(p['spec'].podSelector, labels));
  if (policies.length === 0) return ['anything'];
  const out = new Set<string>();
  for (const p of policies) {
    for (const rule of p['spec'].egress ?? []) {
      const ports = (rule.ports ?? []).map((x: Obj) => `${x.protocol ?? 'TCP'}/${x.port}`);
      const peers = (rule.to ?? []).map((t: Obj) => {
        if (t.ipBlock) return `ipBlock:${t.ipBlock.cidr}${t.ipBlock.except ? ` except ${t.ipBlock.except.join(',')}` : ''}`;
        const ns = t.namespaceSelector ? `namespace:${t.namespaceSelector.matchLabels?.['kubernetes.io/metadata.name'] ?? '*'}` : '';
        const pods = t.podSelector ? `pods:${JSON.stringify(Object.fromEntries(Object.entries(t.podSelector.matchLabels ?? {}).sort()))}` : '';
        return [ns, pods].filter(Boolean).join(' ');
      });
      for (const peer of peers.length ? peers : ['anywhere']) for (const port of ports.length ? ports : ['any port']) out.add(`${peer} ${port}`);
    }
  }
  return [...out].sort();
}

/**
 * Every pod that connects to Postgres (the apps' Deployments and the migration Job) gets the same
 * TLS settings (DATABASE_SSL_MODE, DATABASE_SSL_CA_FILE), so the Job never connects less safely than
 * the apps; and a CA file it names is in a read-only mount of a Secret volume that puts a file of
 * that name there (else the app refuses to start: "DATABASE_SSL_CA_FILE cannot be read").
 */
export function databaseTlsProblems(set: ManifestSet): string[] {
  const problems: string[] = [];
  const pods: Array<{ where: string; pod: Obj; env: Record<string, string> }> = [
    ...workloads(set).map((w) => ({ where: `Deployment/${w.deployment['metadata'].name}`, pod: w.deployment['spec'].template.spec as Obj, env: w.env })),
    ...ofKind(set, 'Job').map((j) => {
      const env: Record<string, string> = {};
      for (const e of (j['spec'].template.spec.containers[0].env ?? []) as Obj[]) if (e.value !== undefined) env[e.name] = String(e.value);
      return { where: `Job/${j['metadata'].name}`, pod: j['spec'].template.spec as Obj, env };
    }),
  ];
  const settings = (env: Record<string, string>) => `DATABASE_SSL_MODE=${env['DATABASE_SSL_MODE'] ?? ''} DATABASE_SSL_CA_FILE=${env['DATABASE_SSL_CA_FILE'] ?? ''}`;
  const first = pods[0];
  for (const { where, pod, env } of pods) {
    if (first && settings(env) !== settings(first.env)) problems.push(`${set.name}: ${where} connects with ${settings(env)}, ${first.where} with ${settings(first.env)}`);
    const file = env['DATABASE_SSL_CA_FILE'];
    if (!file) continue;
    const container = pod['containers'][0] as Obj;
    const mount = ((container['volumeMounts'] ?? []) as Obj[]).find((m) => file.startsWith(`${String(m.mountPath).replace(/\/$/, '')}/`));
    if (!mount) {
      problems.push(`${set.name}: ${where}: DATABASE_SSL_CA_FILE ${file} is in no volume mount`);
      continue;
    }
    if (mount.readOnly !== true) problems.push(`${set.name}: ${where}: the CA bundle's mount ${mount.mountPath} is not read-only`);
    const volume = ((pod['volumes'] ?? []) as Obj[]).find((v) => v.name === mount.name);
    const relative = file.slice(String(mount.mountPath).replace(/\/$/, '').length + 1);
    if (!volume?.secret) problems.push(`${set.name}: ${where}: the CA bundle's volume ${mount.name} is not a Secret`);
    else if (volume.secret.items && !(volume.secret.items as Obj[]).some((i) => i.path === relative)) {
      problems.push(`${set.name}: ${where}: Secret volume ${mount.name} puts no file at ${relative} (DATABASE_SSL_CA_FILE ${file})`);
    }
  }
  return problems;
}
