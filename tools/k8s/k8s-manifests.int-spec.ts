/**
 * The Helm chart, k8s/base and the kustomize overlays, checked without a cluster: the chart is
 * rendered by the real `helm template` (tools/k8s/helm.ts), the overlays by `kubectl kustomize`
 * (skipped, saying so, where kubectl is missing). Every object is validated against the Kubernetes
 * schemas, and the workloads against the apps' own code: each app's env schema (what it requires,
 * its port) and its routes (the probes).
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv from 'ajv';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { appContract, appNames, nestGetRoutes, ROOT, type AppContract } from './app-contracts';
import { HelmError, mergeValues, readChartValues, renderChart } from './helm';
import { createDataSource } from '@flagship/persistence';
import { KUSTOMIZE_RENDERINGS, kustomizeBase } from './kustomize-base';
import {
  type ManifestSet,
  type Obj,
  type Workload,
  databaseTlsProblems,
  egressOf,
  matchesSelector,
  ofKind,
  podProblems,
  reachableFrom,
  schemaProblems,
  securityProblems,
  startupProblems,
  unknownVariables,
  wiringProblems,
  workloads,
} from './manifest-checks';

const CHART = join(ROOT, 'k8s/helm/flagship');
const VALUES_FILES = { production: join(CHART, 'values-production.yaml'), development: join(CHART, 'values-development.yaml') };
// KUBECTL names another binary (or a missing one, to see the skip).
const KUBECTL = process.env['KUBECTL'] ?? 'kubectl';
const kubectl = spawnSync(KUBECTL, ['version', '--client'], { encoding: 'utf8' });
const hasKubectl = kubectl.status === 0;
if (!hasKubectl) {
  console.warn(`${KUBECTL} is not installed: k8s/base and the overlays are NOT built with kustomize in this run, so their objects are not checked (k8s/base's files are still parsed and compared with the chart).`);
}

function kustomize(dir: string): Obj[] {
  const out = spawnSync(KUBECTL, ['kustomize', join(ROOT, dir)], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (out.status !== 0) throw new Error(`kubectl kustomize ${dir} failed: ${out.stderr}`);
  return parseAll(out.stdout, dir);
}

function parseAll(text: string, where: string): Obj[] {
  return parseAllDocuments(text)
    .map((d) => {
      if (d.errors.length > 0) throw new Error(`${where}: ${d.errors[0].message}`);
      return d.toJS() as Obj | null;
    })
    .filter((o): o is Obj => o !== null && o !== undefined);
}

/** Every rendering the platform team can deploy; `production` says which must be production-safe. */
interface Target extends ManifestSet {
  production: boolean;
  /** Shipped as is (not a what-if rendering): ports must equal the apps' defaults. */
  shipped: boolean;
}

const targets: Target[] = [
  { name: 'chart values.yaml', objects: renderChart(CHART).documents, production: true, shipped: true },
  { name: 'chart values-production.yaml', objects: renderChart(CHART, { valuesFiles: [VALUES_FILES.production] }).documents, production: true, shipped: true },
  { name: 'chart values-development.yaml', objects: renderChart(CHART, { valuesFiles: [VALUES_FILES.development] }).documents, production: false, shipped: true },
  ...(hasKubectl
    ? [
        { name: 'k8s/base', objects: kustomize('k8s/base'), production: true, shipped: true },
        { name: 'k8s/overlays/production', objects: kustomize('k8s/overlays/production'), production: true, shipped: true },
        { name: 'k8s/overlays/development', objects: kustomize('k8s/overlays/development'), production: false, shipped: true },
      ]
    : []),
];

/** values.schema.json compiled once, as strict as helm's validation (and stricter: ajv's strict mode). */
let compiled: ReturnType<Ajv['compile']> | undefined;
const valuesValidator = () =>
  (compiled ??= new Ajv({ allErrors: true, strict: true, allowUnionTypes: true }).compile(JSON.parse(readFileSync(join(CHART, 'values.schema.json'), 'utf8')) as object));

const contracts = new Map<string, AppContract>(appNames().map((a) => [a, appContract(a)]));
const contractOf = (app: string): AppContract => {
  const c = contracts.get(app);
  if (!c) throw new Error(`a Deployment runs "${app}", which is not an app of apps/ with an env.schema.ts`);
  return c;
};

describe('kubectl kustomize', () => {
  // Skipped, and said so above, only where kubectl is not installed.
  (hasKubectl ? it : it.skip)('renders k8s/base and both overlays', () => {
    const rendered = targets.filter((t) => t.name.startsWith('k8s/'));
    expect(rendered.map((t) => [t.name, t.objects.length > 10])).toEqual([
      ['k8s/base', true],
      ['k8s/overlays/production', true],
      ['k8s/overlays/development', true],
    ]);
  });
});

describe('k8s/base', () => {
  // The overlays too: each is the chart rendered with its values file, so neither can drift from it.
  it.each(KUSTOMIZE_RENDERINGS.map((r) => [r.dir, r] as const))('%s is what the chart renders with its values (UPDATE_K8S_BASE=1 rewrites it)', (dir, rendering) => {
    const files = kustomizeBase(CHART, rendering);
    for (const [name, text] of Object.entries(files)) {
      const path = join(ROOT, dir, name);
      if (process.env['UPDATE_K8S_BASE'] === '1') writeFileSync(path, text);
      expect([name, readFileSync(path, 'utf8')]).toEqual([name, text]);
    }
    // Nothing else in the directory: a hand-written patch beside the generated files would drift.
    expect(readdirSync(join(ROOT, dir)).sort()).toEqual(Object.keys(files).sort());
  });

  it('parses: every document of every file is a Kubernetes object', () => {
    const objects = parseAll(readFileSync(join(ROOT, 'k8s/base/flagship.yaml'), 'utf8'), 'k8s/base/flagship.yaml');
    expect(objects.length).toBeGreaterThan(10);
    expect(schemaProblems({ name: 'k8s/base/flagship.yaml', objects })).toEqual([]);
  });
});

describe.each(targets.map((t) => [t.name, t] as const))('%s', (_name, target) => {
  const all = workloads(target);

  it('deploys every app: management-api, ai-gateway, billing-worker and at least one orep-server', () => {
    const apps = new Set(all.map((w) => w.app));
    for (const app of contracts.keys()) expect([app, apps.has(app)]).toEqual([app, true]);
  });

  it('every object is valid against the Kubernetes schemas', () => {
    expect(schemaProblems(target)).toEqual([]);
  });

  it('gives every app each variable it requires at start-up, and its own config validation accepts them', () => {
    const problems = all.flatMap((w) => [...w.problems, ...startupProblems(target, w, contractOf(w.app)).problems]);
    expect(problems).toEqual([]);
  });

  it('gives no app a variable its env schema does not read', () => {
    expect(all.flatMap((w) => unknownVariables(target, w, contractOf(w.app)))).toEqual([]);
  });

  it('container ports match the apps config, probes request routes the apps serve, termination waits for the drain', () => {
    const problems = all.flatMap((w) => {
      const contract = contractOf(w.app);
      const { config } = startupProblems(target, w, contract);
      if (!config) return [`${target.name}: ${w.component}: its configuration does not load, so its probes were not checked against its routes`];
      return podProblems(target, w, contract, nestGetRoutes(w.app, config), target.shipped);
    });
    expect(problems).toEqual([]);
  });

  it('each Deployment has its Service, an HPA on CPU or fixed replicas, and a PDB when it runs several pods', () => {
    expect(wiringProblems(target)).toEqual([]);
  });

  it('runs the migrations as a Job that gets DATABASE_URL and a lock timeout, before the apps (a Helm hook; with kustomize a plain Job applied first)', () => {
    const jobs = ofKind(target, 'Job');
    expect(jobs).toHaveLength(1);
    const job = jobs[0];
    if (target.name.startsWith('chart')) {
      expect(job['metadata'].name).toBe('flagship-migrate');
      expect(job['metadata'].annotations['helm.sh/hook']).toBe('pre-install,pre-upgrade');
    } else {
      // Named after what it runs (a Job's template is immutable); Argo CD applies it in an earlier wave.
      expect(job['metadata'].name).toMatch(/^flagship-migrate-[0-9a-f]{10}$/);
      expect(job['metadata'].annotations).toEqual({ 'argocd.argoproj.io/sync-wave': '-1' });
    }
    const c = job['spec'].template.spec.containers[0];
    expect(c.command).toEqual(['node', 'dist/migrate.js']);
    expect(c.image).toMatch(/\/management-api:/);
    expect(c.env.map((e: Obj) => e.name)).toContain('DATABASE_URL');
    expect(c.env.find((e: Obj) => e.name === 'PGOPTIONS')).toEqual({ name: 'PGOPTIONS', value: '-c lock_timeout=10s' });
    expect(securityProblems(`${target.name}: Job/${job['metadata'].name}`, job['spec'].template.spec)).toEqual([]);
  });

  it('connects to Postgres the same way from every app and the migration Job; a CA bundle it names is mounted read-only from a Secret', () => {
    expect(databaseTlsProblems(target)).toEqual([]);
    if (/production/.test(target.name)) {
      // The production values verify the server: its certificate from the CA bundle, and the host it names.
      for (const w of all) expect([w.component, w.env['DATABASE_SSL_MODE']]).toEqual([w.component, 'verify-full']);
    }
  });

  it('lets no app be reached from anywhere: management-api, ai-gateway and billing-worker only from the ingress controller (and helm test), never on the metrics port', () => {
    const fromController = ['namespace:ingress-nginx', `pods:${JSON.stringify({ 'app.kubernetes.io/component': 'helm-test', 'app.kubernetes.io/instance': 'flagship' })}`];
    for (const w of all) {
      const labels = w.deployment['spec'].template.metadata.labels;
      // Prometheus may scrape every app (its metrics port) when a monitor is on.
      const peers = [...reachableFrom(target, labels)].filter((p) => p !== 'namespace:monitoring');
      expect([w.component, peers]).toEqual([w.component, w.app === 'orep-server' ? expect.not.arrayContaining(['anyone']) : fromController]);
    }
    // The controller's rules open the http port alone.
    for (const p of ofKind(target, 'NetworkPolicy')) {
      for (const rule of p['spec'].ingress ?? []) {
        if ((rule.from ?? []).some((f: Obj) => f.namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name'] === 'ingress-nginx')) {
          expect([p['metadata'].name, rule.ports]).toEqual([p['metadata'].name, [{ port: 'http', protocol: 'TCP' }]]);
        }
      }
    }
  });

  it('lets each app open connections only to what it calls: DNS, Postgres, Redis, and its own providers (egress)', () => {
    const dns = ['namespace:kube-system pods:{"k8s-app":"kube-dns"} TCP/53', 'namespace:kube-system pods:{"k8s-app":"kube-dns"} UDP/53'];
    const vpc = (port: number) => ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16'].map((c) => `ipBlock:${c} TCP/${port}`);
    const internet = 'ipBlock:0.0.0.0/0 except 10.0.0.0/8,172.16.0.0/12,192.168.0.0/16 TCP/443';
    const aws = 'ipBlock:0.0.0.0/0 TCP/443';
    // The image URLs the gateway fetches for the in-house model server: public addresses only, metadata and CGNAT out too.
    const imageHosts = 'ipBlock:0.0.0.0/0 except 10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,100.64.0.0/10,169.254.0.0/16,127.0.0.0/8 TCP/443';
    const calls: Record<string, string[]> = {
      'management-api': [internet], // Stripe and the identity provider's JWKS
      'ai-gateway': ['namespace:ml TCP/8000', internet, imageHosts], // the in-house and the hosted model providers, the image hosts
      'billing-worker': [internet], // Stripe
      'orep-server': [],
    };
    for (const w of all) {
      const usesAws = 'SECRETS_MANAGER_SECRET_ID' in w.env;
      const expected = [...new Set([...dns, ...vpc(5432), ...vpc(6379), ...calls[w.app], ...(usesAws ? [aws] : [])])].sort();
      expect([w.component, egressOf(target, w.deployment['spec'].template.metadata.labels)]).toEqual([w.component, expected]);
    }
    for (const job of ofKind(target, 'Job')) {
      expect(egressOf(target, job['spec'].template.metadata.labels)).toEqual([...dns, ...vpc(5432)].sort());
    }
  });

  it('routes only /webhooks/stripe of billing-worker through the Ingress', () => {
    const ingresses = ofKind(target, 'Ingress');
    const services = new Set(ofKind(target, 'Service').map((s) => s['metadata'].name));
    for (const ing of ingresses) {
      for (const rule of ing['spec'].rules) {
        for (const p of rule.http.paths) {
          expect([p.backend.service.name, services.has(p.backend.service.name)]).toEqual([p.backend.service.name, true]);
          // Never the internal port: /metrics and the detailed /readyz stay off the ingress.
          expect([p.backend.service.name, p.backend.service.port]).toEqual([p.backend.service.name, { name: 'http' }]);
          if (/billing-worker/.test(p.backend.service.name)) expect([p.path, p.pathType]).toEqual(['/webhooks/stripe', 'Exact']);
        }
      }
    }
    if (target.name.includes('production')) expect(ingresses).toHaveLength(1);
  });

  it('the apps behind the Ingress trust its one proxy hop (TRUST_PROXY=1); an orep-server instance when it is exposed to browsers through it, else none', () => {
    const routed = new Set(ofKind(target, 'Ingress').flatMap((i) => i['spec'].rules.flatMap((r: Obj) => r.http.paths.map((p: Obj) => p.backend.service.name as string))));
    for (const w of all) {
      const behindIngress = w.app !== 'orep-server' || routed.has(w.deployment['metadata'].name);
      expect([w.component, w.env['TRUST_PROXY'] ?? '0']).toEqual([w.component, behindIngress ? '1' : '0']);
    }
    // The production example exposes its instance: the per-address SSE limit must see browsers, not the ingress.
    if (target.name.includes('production')) expect(all.find((w) => w.app === 'orep-server')!.env['TRUST_PROXY']).toBe('1');
  });

  it("every orep-server instance names the URL its clients reach (OREP_PUBLIC_URL, required in production with push on): its publicUrl, else its Service's", () => {
    for (const w of all.filter((x) => x.app === 'orep-server')) {
      const service = ofKind(target, 'Service').find((x) => x['metadata'].name === w.deployment['metadata'].name)!;
      const routedHost = ofKind(target, 'Ingress')
        .flatMap((i) => i['spec'].rules)
        .find((r: Obj) => r.http.paths.some((p: Obj) => p.backend.service.name === service['metadata'].name))?.host;
      const port = service['spec'].ports.find((p: Obj) => p.name === 'http').port;
      expect([w.component, w.env['OREP_PUBLIC_URL']]).toEqual([
        w.component,
        routedHost ? `https://${routedHost}` : expect.stringMatching(new RegExp(`^http://${service['metadata'].name}\\.[a-z0-9-]+:${port}$`)),
      ]);
    }
  });

  it('ai-gateway verifies the tokens management-api issues (one issuer and audience)', () => {
    const api = all.find((w) => w.app === 'management-api')!;
    const gateway = all.find((w) => w.app === 'ai-gateway')!;
    expect(api.env['OAUTH_ISSUER']).toMatch(/^https?:\/\//);
    expect([gateway.env['OAUTH_ISSUER'], gateway.env['OAUTH_AUDIENCE']]).toEqual([api.env['OAUTH_ISSUER'], api.env['OAUTH_AUDIENCE']]);
  });

  it('management-api (checkout, portal) and billing-worker (webhooks, sync) use one Stripe account and the same plan prices', () => {
    const stripeOf = (app: string) => {
      const w = all.find((x) => x.app === app)!;
      const key = w.container['env'].find((e: Obj) => e.name === 'STRIPE_SECRET_KEY')?.valueFrom?.secretKeyRef;
      const prices = ['STRIPE_PRICE_FREE', 'STRIPE_PRICE_STANDARD', 'STRIPE_PRICE_PREMIUM'].map((n) => w.env[n]);
      return { key: key && { name: key.name, key: key.key }, prices };
    };
    const api = stripeOf('management-api');
    expect(api.key).toBeDefined();
    expect(api.prices.every((p) => /^price_\w+$/.test(p ?? ''))).toBe(true);
    expect(stripeOf('billing-worker')).toEqual(api);
  });

  if (target.production) {
    it('is production: NODE_ENV=production everywhere and never the dev identity provider', () => {
      for (const w of all) expect([w.component, w.env['NODE_ENV']]).toEqual([w.component, 'production']);
      const api = all.find((w) => w.app === 'management-api')!;
      expect(api.env['IDP_MODE']).toBe('oidc');
    });
  }
});

describe('orep-server replicas', () => {
  // An instance's replicas is its floor under the shared orepServer.autoscaling (production says 3).
  it.each(['chart values-production.yaml', ...(hasKubectl ? ['k8s/overlays/production'] : [])])('%s runs each instance with at least the replicas its values give it', (name) => {
    const values = parseYaml(readFileSync(VALUES_FILES.production, 'utf8')) as { orepServer: { instances: Array<{ name: string; replicas: number }> } };
    const set = targets.find((t) => t.name === name)!;
    const floors = values.orepServer.instances.map((i) => {
      const hpa = ofKind(set, 'HorizontalPodAutoscaler').find((h) => h['metadata'].name === `flagship-orep-${i.name}`);
      const deployment = ofKind(set, 'Deployment').find((d) => d['metadata'].name === `flagship-orep-${i.name}`)!;
      return [i.name, hpa ? hpa['spec'].minReplicas : deployment['spec'].replicas];
    });
    expect(floors).toEqual(values.orepServer.instances.map((i) => [i.name, i.replicas]));
    expect(floors).toEqual([['acme-production', 3]]);
  });
});

describe('development and production', () => {
  const pairs: Array<[string, string]> = [['chart values-production.yaml', 'chart values-development.yaml']];
  if (hasKubectl) pairs.push(['k8s/overlays/production', 'k8s/overlays/development']);

  it.each(pairs)('%s and %s use different issuers and audiences, so a development token is refused in production', (prod, dev) => {
    const env = (name: string) => workloads(targets.find((t) => t.name === name)!).find((w) => w.app === 'management-api')!.env;
    for (const key of ['OAUTH_ISSUER', 'OAUTH_AUDIENCE', 'IDP_AUDIENCE']) {
      expect([key, env(prod)[key] === env(dev)[key]]).toEqual([key, false]);
    }
    // Both are reached through a public Ingress: neither runs the embedded dev identity provider.
    expect([env(prod)['IDP_MODE'], env(dev)['IDP_MODE']]).toEqual(['oidc', 'oidc']);
  });
});

describe('values.schema.json', () => {
  const schema = JSON.parse(readFileSync(join(CHART, 'values.schema.json'), 'utf8')) as object;
  const validate = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true }).compile(schema);
  const base = readChartValues(CHART);

  it.each([
    ['values.yaml', []],
    ['values.yaml + values-production.yaml', [VALUES_FILES.production]],
    ['values.yaml + values-development.yaml', [VALUES_FILES.development]],
  ])('accepts %s (merged as helm -f does)', (_name, files) => {
    const values = readChartValues(CHART, { valuesFiles: files });
    expect(validate(values) ? [] : validate.errors).toEqual([]);
  });

  // Each a value a person could plausibly write, and the chart must refuse.
  it.each<[string, Record<string, unknown>]>([
    ['the dev identity provider in production', { nodeEnv: 'production', idp: { mode: 'dev' } }],
    ['oidc without a JWKS address', { idp: { mode: 'oidc', jwksUri: '' } }],
    ['a port as a string', { apps: { 'ai-gateway': { port: '3001' } } }],
    ['a misspelt key', { apps: { 'billing-worker': { replica: 2 } } }],
    ['an unknown top-level key', { postgress: { url: 'postgres://x/y' } }],
    ['a boolean where the ConfigMap needs a string', { apps: { 'ai-gateway': { config: { PROVIDER_HOSTED_EMERGENCY: false } } } }],
    ['a lower-case variable name', { apps: { 'ai-gateway': { config: { provider_url: 'x' } } } }],
    ['an orep tenant that is not a UUID', { orepServer: { instances: [{ name: 'a', tenantId: 'acme', environment: 'production', replicas: 1, authTokenKey: 'T' }] } }],
    ['no Secret and no database URL', { secrets: { existingSecret: '' }, redis: { url: 'redis://r:6379' }, orepServer: { instances: [] } }],
    ['an orep instance name too long for its Service name', { orepServer: { instances: [{ name: 'a-very-long-instance-name', tenantId: '6f1c1f3e-8a52-4c1e-9d53-2f0c7d7b1a01', environment: 'production', replicas: 1, authTokenKey: 'T' }] } }],
    ['CPU target over 100%', { apps: { 'management-api': { autoscaling: { targetCPUUtilizationPercentage: 150 } } } }],
    ['a pull policy Kubernetes does not have', { image: { pullPolicy: 'Sometimes' } }],
    ['a shutdown grace in seconds instead of milliseconds', { shutdownGraceMs: 10 }],
    ['a root pod', { podSecurityContext: { runAsNonRoot: false } }],
    ['a Redis URL that is not one', { redis: { url: 'localhost:6379' } }],
    ["libpq's sslmode prefer, which the driver cannot honour", { postgres: { tls: { mode: 'prefer' } } }],
    ['a misspelt TLS key', { postgres: { tls: { caSecret: { name: 'rds-ca', file: 'ca.pem' } } } }],
    ["an app's DATABASE_URL Secret without a name", { apps: { 'ai-gateway': { databaseUrlSecret: { key: 'DATABASE_URL' } } } }],
    ["an orep instance's DATABASE_URL Secret without a name", { orepServer: { instances: [{ name: 'a', tenantId: '6f1c1f3e-8a52-4c1e-9d53-2f0c7d7b1a01', environment: 'production', replicas: 1, authTokenKey: 'T', databaseUrlSecret: { key: 'url' } }] } }],
  ])('rejects %s', (_name, override) => {
    expect(validate(mergeValues(base, override))).toBe(false);
  });

  it('and the templates refuse what the schema cannot express (autoscaling minReplicas above maxReplicas)', () => {
    expect(() =>
      renderChart(CHART, { values: { apps: { 'ai-gateway': { autoscaling: { enabled: true, minReplicas: 5, maxReplicas: 2 } } } } }),
    ).toThrow(HelmError);
    expect(() => renderChart(CHART, { values: { apps: { 'ai-gateway': { autoscaling: { enabled: true, minReplicas: 5, maxReplicas: 2 } } } } })).toThrow(
      /ai-gateway: autoscaling.minReplicas is above maxReplicas/,
    );
  });
});

describe('chart options', () => {
  it('database TLS (postgres.tls): every app and the migration Job get the mode and the CA bundle, mounted read-only from the Secret', () => {
    const set = {
      name: 'database TLS',
      objects: renderChart(CHART, { values: { migrations: { mode: 'job' }, postgres: { tls: { mode: 'verify-full', caSecret: { name: 'rds-ca', key: 'global-bundle.pem' } } } } }).documents,
    };
    expect(databaseTlsProblems(set)).toEqual([]);
    const pods = [...ofKind(set, 'Deployment'), ...ofKind(set, 'Job')].map((o) => o['spec'].template.spec as Obj);
    expect(pods).toHaveLength(5);
    for (const pod of pods) {
      expect(pod['volumes']).toContainEqual({ name: 'postgres-ca', secret: { secretName: 'rds-ca', items: [{ key: 'global-bundle.pem', path: 'ca.crt' }], defaultMode: 0o444 } });
      expect(pod['containers'][0].volumeMounts).toContainEqual({ name: 'postgres-ca', mountPath: '/etc/flagship/postgres-ca', readOnly: true });
    }
    for (const w of workloads(set)) {
      expect(w.env).toMatchObject({ DATABASE_SSL_MODE: 'verify-full', DATABASE_SSL_CA_FILE: '/etc/flagship/postgres-ca/ca.crt' });
      // Each app's own schema reads both, and its start-up validation takes them.
      expect(unknownVariables(set, w, contractOf(w.app))).toEqual([]);
      expect(startupProblems(set, w, contractOf(w.app)).problems).toEqual([]);
    }
    const job = ofKind(set, 'Job')[0]['spec'].template.spec.containers[0].env as Obj[];
    expect(job).toEqual(expect.arrayContaining([{ name: 'DATABASE_SSL_MODE', value: 'verify-full' }, { name: 'DATABASE_SSL_CA_FILE', value: '/etc/flagship/postgres-ca/ca.crt' }]));
    // Off by default: nothing set, nothing mounted (the URL's sslmode, else disable).
    const plain = { name: 'no TLS values', objects: renderChart(CHART).documents };
    for (const w of workloads(plain)) expect(Object.keys(w.env).filter((k) => k.startsWith('DATABASE_SSL'))).toEqual([]);
    expect(JSON.stringify(plain.objects)).not.toContain('postgres-ca');
    // What the apps would refuse at start-up, helm refuses first.
    expect(() => renderChart(CHART, { values: { postgres: { tls: { mode: 'verify-ca' } } } })).toThrow(/postgres.tls.mode verify-ca needs postgres.tls.caSecret/);
    expect(() => renderChart(CHART, { values: { postgres: { tls: { mode: 'disable', caSecret: { name: 'rds-ca' } } } } })).toThrow(/postgres.tls.caSecret is set but postgres.tls.mode is disable/);
    // The check itself: a mount that is not read-only, a Job connecting less safely than the apps.
    const broken = structuredClone(set);
    const [first] = ofKind(broken, 'Deployment');
    first!['spec'].template.spec.containers[0].volumeMounts.find((m: Obj) => m.name === 'postgres-ca').readOnly = false;
    const brokenJob = ofKind(broken, 'Job')[0]['spec'].template.spec.containers[0].env as Obj[];
    brokenJob.find((e) => e.name === 'DATABASE_SSL_MODE')!.value = 'require';
    expect(databaseTlsProblems(broken)).toEqual([
      expect.stringContaining("the CA bundle's mount /etc/flagship/postgres-ca is not read-only"),
      expect.stringMatching(/Job\/flagship-migrate-\w+ connects with DATABASE_SSL_MODE=require .* with DATABASE_SSL_MODE=verify-full/),
    ]);
  });

  it("database credentials per app and per orep-server instance (databaseUrlSecret): a workload's own Secret for DATABASE_URL, the shared one for the others", () => {
    const urlSource = (values: Record<string, unknown>) => {
      const set = { name: 'per-app credentials', objects: renderChart(CHART, { values }).documents };
      const pods = [...ofKind(set, 'Deployment'), ...ofKind(set, 'Job')];
      return Object.fromEntries(
        pods.map((o) => {
          const env = o['spec'].template.spec.containers[0].env as Obj[];
          const url = env.find((e) => e.name === 'DATABASE_URL');
          const configMap = workloads(set).find((w) => w.deployment === o);
          return [o['spec'].template.metadata.labels['app.kubernetes.io/component'], url?.valueFrom?.secretKeyRef ?? url?.value ?? configMap?.env['DATABASE_URL']];
        }),
      );
    };
    const shared = { name: 'flagship-secrets', key: 'DATABASE_URL' };
    expect(urlSource({})).toEqual({ 'management-api': shared, 'ai-gateway': shared, 'billing-worker': shared, 'orep-example-production': shared, migration: shared });
    expect(
      urlSource({
        apps: { 'ai-gateway': { databaseUrlSecret: { name: 'flagship-db-gateway' } } },
        orepServer: { databaseUrlSecret: { name: 'flagship-db-orep', key: 'url' } },
        migrations: { databaseUrlSecret: { name: 'flagship-db-owner' } },
      }),
    ).toEqual({
      'management-api': shared,
      'ai-gateway': { name: 'flagship-db-gateway', key: 'DATABASE_URL' },
      'billing-worker': shared,
      'orep-example-production': { name: 'flagship-db-orep', key: 'url' },
      migration: { name: 'flagship-db-owner', key: 'DATABASE_URL' },
    });
    // Each orep-server instance (a tenant's) may have its own; one without falls back to orepServer's, else the shared one.
    const instance = (name: string, databaseUrlSecret?: Record<string, string>) => ({
      name,
      tenantId: '6f1c1f3e-8a52-4c1e-9d53-2f0c7d7b1a01',
      environment: 'production',
      replicas: 1,
      authTokenKey: 'OREP_AUTH_TOKEN',
      ...(databaseUrlSecret ? { databaseUrlSecret } : {}),
    });
    const instances = [instance('acme', { name: 'flagship-db-orep-acme' }), instance('globex', { name: 'flagship-db-orep-globex', key: 'url' }), instance('initech')];
    expect(urlSource({ orepServer: { databaseUrlSecret: { name: 'flagship-db-orep' }, instances } })).toMatchObject({
      'orep-acme': { name: 'flagship-db-orep-acme', key: 'DATABASE_URL' },
      'orep-globex': { name: 'flagship-db-orep-globex', key: 'url' },
      'orep-initech': { name: 'flagship-db-orep', key: 'DATABASE_URL' },
    });
    expect(urlSource({ orepServer: { instances } })).toMatchObject({ 'orep-acme': { name: 'flagship-db-orep-acme', key: 'DATABASE_URL' }, 'orep-initech': shared, 'management-api': shared });
    // With postgres.url as a value, an app's (or an instance's) own Secret still wins for it (and its ConfigMap holds no URL).
    const withUrl = urlSource({ postgres: { url: 'postgres://flagship@db:5432/flagship' }, apps: { 'billing-worker': { databaseUrlSecret: { name: 'flagship-db-billing' } } }, orepServer: { instances } });
    expect(withUrl).toMatchObject({
      'management-api': 'postgres://flagship@db:5432/flagship',
      'billing-worker': { name: 'flagship-db-billing', key: 'DATABASE_URL' },
      'orep-acme': { name: 'flagship-db-orep-acme', key: 'DATABASE_URL' },
      'orep-initech': 'postgres://flagship@db:5432/flagship',
      migration: 'postgres://flagship@db:5432/flagship',
    });
  });

  it("the console's OIDC client (idp.clientId, idp.displayName) reaches management-api only when set", () => {
    const env = (values?: Record<string, unknown>) =>
      workloads({ name: 'idp', objects: renderChart(CHART, { valuesFiles: [VALUES_FILES.production], ...(values ? { values } : {}) }).documents }).find((w) => w.component === 'management-api')!.env;
    expect(env()).not.toHaveProperty('IDP_CLIENT_ID');
    expect(env({ idp: { clientId: 'console-spa', displayName: 'Acme SSO' } })).toMatchObject({ IDP_CLIENT_ID: 'console-spa', IDP_DISPLAY_NAME: 'Acme SSO' });
  });

  it('AWS Secrets Manager: the apps get SECRETS_MANAGER_SECRET_ID, each through a ServiceAccount of its own with its own IAM role', () => {
    const set = { name: 'production', objects: renderChart(CHART, { valuesFiles: [VALUES_FILES.production] }).documents };
    const roles = Object.fromEntries(ofKind(set, 'ServiceAccount').map((sa) => [sa['metadata'].name, sa['metadata'].annotations?.['eks.amazonaws.com/role-arn']]));
    expect(roles).toEqual({
      'flagship-management-api': 'arn:aws:iam::123456789012:role/flagship-production-management-api',
      'flagship-ai-gateway': 'arn:aws:iam::123456789012:role/flagship-production-ai-gateway',
      'flagship-billing-worker': 'arn:aws:iam::123456789012:role/flagship-production-billing-worker',
      // orep-server and the migrations read only the Kubernetes Secret: no AWS role.
      'flagship-orep-server': undefined,
      'flagship-migrate': undefined,
    });
    for (const w of workloads(set)) {
      // orep-server reads no secret store: it is given none.
      expect([w.component, w.env['SECRETS_MANAGER_SECRET_ID']]).toEqual([w.component, w.app === 'orep-server' ? undefined : 'flagship/production']);
      expect([w.component, w.deployment['spec'].template.spec.serviceAccountName]).toEqual([w.component, `flagship-${w.app}`]);
    }
    expect(ofKind(set, 'Job')[0]['spec'].template.spec.serviceAccountName).toBe('flagship-migrate');
    // The Job's ServiceAccount is a hook created before it: the release's objects do not exist yet then.
    const migrateSa = ofKind(set, 'ServiceAccount').find((sa) => sa['metadata'].name === 'flagship-migrate')!;
    expect(migrateSa['metadata'].annotations).toMatchObject({ 'helm.sh/hook': 'pre-install,pre-upgrade', 'helm.sh/hook-weight': '-1' });
    expect(migrateSa['metadata'].labels['app.kubernetes.io/component']).toBe('migration');
  });

  it("an app's own Secrets Manager secret (awsSecretsManagerSecretId) replaces the shared one for it alone", () => {
    const set = { name: 'own secrets', objects: renderChart(CHART, { valuesFiles: [VALUES_FILES.production], values: { apps: { 'ai-gateway': { awsSecretsManagerSecretId: 'flagship/production/ai-gateway' } } } }).documents };
    const ids = Object.fromEntries(workloads(set).map((w) => [w.component, [w.env['SECRETS_MANAGER_SECRET_ID'], w.env['AWS_REGION']]]));
    expect(ids).toEqual({
      'management-api': ['flagship/production', 'us-east-1'],
      'ai-gateway': ['flagship/production/ai-gateway', 'us-east-1'],
      'billing-worker': ['flagship/production', 'us-east-1'],
      'orep-acme-production': [undefined, undefined],
    });
    // Without a shared secret, only that app reads Secrets Manager.
    const alone = workloads({ name: 'alone', objects: renderChart(CHART, { values: { apps: { 'billing-worker': { awsSecretsManagerSecretId: 'flagship/billing' } } } }).documents });
    expect(alone.filter((w) => w.env['SECRETS_MANAGER_SECRET_ID']).map((w) => [w.component, w.env['SECRETS_MANAGER_SECRET_ID']])).toEqual([['billing-worker', 'flagship/billing']]);
  });

  it('ServiceAccounts: serviceAccount.annotations on all, an app\'s own added (and winning); existing ones by name when the chart creates none', () => {
    const accounts = (values: Record<string, unknown>) => {
      const set = { name: 'sa', objects: renderChart(CHART, { values }).documents };
      return {
        created: Object.fromEntries(ofKind(set, 'ServiceAccount').map((sa) => [sa['metadata'].name, sa['metadata'].annotations ?? {}])),
        used: [...ofKind(set, 'Deployment'), ...ofKind(set, 'Job')].map((o) => o['spec'].template.spec.serviceAccountName),
      };
    };
    const annotated = accounts({ serviceAccount: { annotations: { team: 'platform', tier: 'shared' } }, apps: { 'ai-gateway': { serviceAccount: { annotations: { tier: 'gateway' } } } } });
    expect(annotated.created['flagship-ai-gateway']).toEqual({ team: 'platform', tier: 'gateway' });
    expect(annotated.created['flagship-management-api']).toEqual({ team: 'platform', tier: 'shared' });
    const existing = accounts({ serviceAccount: { create: false, name: 'shared' }, apps: { 'management-api': { serviceAccount: { name: 'api-sa' } } } });
    expect(existing.created).toEqual({});
    expect(existing.used.sort()).toEqual(['api-sa', 'shared', 'shared', 'shared', 'shared']);
  });

  it('in-cluster Postgres and Redis are reachable only from the apps and the migration Job', () => {
    const set = {
      name: 'in-cluster databases',
      objects: renderChart(CHART, { values: { networkPolicy: { postgresPodSelector: { app: 'postgres' }, redisPodSelector: { app: 'redis' } } } }).documents,
    };
    const clients = JSON.stringify({ 'app.kubernetes.io/instance': 'flagship', 'flagship.io/database-client': 'true' });
    for (const db of ['postgres', 'redis']) expect([...reachableFrom(set, { app: db })]).toEqual([`pods:${clients}`]);
    const labelled = [...ofKind(set, 'Deployment'), ...ofKind(set, 'Job')].filter((o) => o['spec'].template.metadata.labels['flagship.io/database-client'] === 'true');
    expect(labelled).toHaveLength(ofKind(set, 'Deployment').length + ofKind(set, 'Job').length);
  });

  it('one orep-server Deployment per tenant and environment listed in values', () => {
    const instances = [
      { name: 'acme-prod', tenantId: '6f1c1f3e-8a52-4c1e-9d53-2f0c7d7b1a01', environment: 'production', replicas: 2, authTokenKey: 'OREP_TOKEN_ACME' },
      { name: 'acme-staging', tenantId: '6f1c1f3e-8a52-4c1e-9d53-2f0c7d7b1a01', environment: 'staging', replicas: 1, authTokenKey: 'OREP_TOKEN_ACME_STAGING' },
    ];
    const set = { name: 'two orep instances', objects: renderChart(CHART, { values: { orepServer: { instances } } }).documents };
    const orep = workloads(set).filter((w) => w.app === 'orep-server');
    expect(orep.map((w) => [w.env['OREP_TENANT_ID'], w.env['OREP_ENVIRONMENT']])).toEqual(instances.map((i) => [i.tenantId, i.environment]));
    const tokens = orep.map((w) => w.container['env'].find((e: Obj) => e.name === 'OREP_AUTH_TOKEN').valueFrom.secretKeyRef.key);
    expect(tokens).toEqual(['OREP_TOKEN_ACME', 'OREP_TOKEN_ACME_STAGING']);
    expect(wiringProblems(set)).toEqual([]);
  });

  it('an orep-server instance exposed to browsers (publicUrl): /ofrep/ of its host routed to it, the ingress hop believed, client-side keys from the Secret', () => {
    const instances = [
      { name: 'shop', tenantId: '6f1c1f3e-8a52-4c1e-9d53-2f0c7d7b1a01', environment: 'production', replicas: 2, authTokenKey: 'OREP_TOKEN_SHOP', publicUrl: 'https://shop.example.com', clientKeysKey: 'OREP_CLIENT_KEYS_SHOP', mobileKeysKey: 'OREP_MOBILE_KEYS_SHOP' },
      { name: 'backend', tenantId: '6f1c1f3e-8a52-4c1e-9d53-2f0c7d7b1a01', environment: 'production', replicas: 1, authTokenKey: 'OREP_TOKEN_BACKEND' },
    ];
    const parentRefs = [{ name: 'public', namespace: 'gateway-system' }];
    const set = { name: 'exposed orep', objects: renderChart(CHART, { namespace: 'flags', values: { orepServer: { instances }, ingress: { enabled: true }, httpRoute: { enabled: true, parentRefs } } }).documents };
    expect(schemaProblems(set)).toEqual([]);
    expect(wiringProblems(set)).toEqual([]);
    const [shop, backend] = ['orep-shop', 'orep-backend'].map((c) => workloads(set).find((w) => w.component === c)!);
    expect([shop!.env['OREP_PUBLIC_URL'], shop!.env['TRUST_PROXY']]).toEqual(['https://shop.example.com', '1']);
    expect([backend!.env['OREP_PUBLIC_URL'], backend!.env['TRUST_PROXY']]).toEqual(['http://flagship-orep-backend.flags:8016', undefined]);
    const keyRef = (w: Workload, name: string) => w.container['env'].find((e: Obj) => e.name === name)?.valueFrom.secretKeyRef;
    expect([keyRef(shop!, 'OREP_CLIENT_KEYS'), keyRef(shop!, 'OREP_MOBILE_KEYS')]).toEqual([
      { name: 'flagship-secrets', key: 'OREP_CLIENT_KEYS_SHOP' },
      { name: 'flagship-secrets', key: 'OREP_MOBILE_KEYS_SHOP' },
    ]);
    expect(keyRef(backend!, 'OREP_CLIENT_KEYS')).toBeUndefined();
    // Only its OFREP paths, on the app's host, by the Ingress and by an HTTPRoute alike.
    const rules = ofKind(set, 'Ingress')[0]!['spec'].rules.filter((r: Obj) => r.host === 'shop.example.com');
    expect(rules.map((r: Obj) => r.http.paths)).toEqual([[{ path: '/ofrep/', pathType: 'Prefix', backend: { service: { name: 'flagship-orep-shop', port: { name: 'http' } } } }]]);
    const route = ofKind(set, 'HTTPRoute').find((r) => r['metadata'].name === 'flagship-orep-shop')!;
    expect([route['spec'].hostnames, route['spec'].rules]).toEqual([['shop.example.com'], [{ matches: [{ path: { type: 'PathPrefix', value: '/ofrep/' } }], backendRefs: [{ name: 'flagship-orep-shop', port: 8016 }] }]]);
    expect(ofKind(set, 'HTTPRoute').some((r) => r['metadata'].name === 'flagship-orep-backend')).toBe(false);
    // The ingress controller reaches the exposed instance, on its http port; the other stays in-cluster.
    expect([...reachableFrom(set, shop!.deployment['spec'].template.metadata.labels)]).toContain('namespace:ingress-nginx');
    expect([...reachableFrom(set, backend!.deployment['spec'].template.metadata.labels)]).not.toContain('namespace:ingress-nginx');
    expect(() => renderChart(CHART, { values: { orepServer: { instances: [{ ...instances[0], publicUrl: 'https://shop.example.com/flags' }] } } })).toThrow(/publicUrl/);
  });

  it("orep-server's own Secrets Manager secret (its client-side keys, rotated without a restart), never the shared one", () => {
    const env = (values: Record<string, unknown>) => {
      const set = { name: 'orep secret', objects: renderChart(CHART, { valuesFiles: [VALUES_FILES.production], values }).documents };
      const orep = workloads(set).find((w) => w.app === 'orep-server')!;
      return { id: orep.env['SECRETS_MANAGER_SECRET_ID'], aws: egressOf(set, orep.deployment['spec'].template.metadata.labels).includes('ipBlock:0.0.0.0/0 TCP/443') };
    };
    expect(env({})).toEqual({ id: undefined, aws: false });
    expect(env({ orepServer: { awsSecretsManagerSecretId: 'flagship/production/orep' } })).toEqual({ id: 'flagship/production/orep', aws: true });
  });

  it('the optional Ingress and ServiceMonitor are off by default and valid when on', () => {
    expect(targets[0].objects.filter((o) => ['Ingress', 'ServiceMonitor', 'PodMonitor', 'HTTPRoute'].includes(o['kind']))).toEqual([]);
    const set = { name: 'ingress and monitor', objects: renderChart(CHART, { values: { ingress: { enabled: true }, serviceMonitor: { enabled: true } } }).documents };
    expect(schemaProblems(set)).toEqual([]);
    const monitor = ofKind(set, 'ServiceMonitor')[0];
    const monitored = ofKind(set, 'Service').filter((s) =>
      Object.entries(monitor['spec'].selector.matchLabels).every(([k, v]) => s['metadata'].labels[k] === v),
    );
    expect(monitored).toHaveLength(ofKind(set, 'Deployment').length);
    expect(monitor['spec'].endpoints).toEqual([expect.objectContaining({ port: 'metrics', path: '/metrics' })]);
    // Prometheus may reach the internal port; the public policy opens only the http one.
    const metricsPolicy = ofKind(set, 'NetworkPolicy').find((p) => p['metadata'].name.endsWith('-metrics'))!;
    expect(metricsPolicy['spec'].ingress[0].ports).toEqual([{ port: 'metrics', protocol: 'TCP' }]);
    const publicPolicy = ofKind(set, 'NetworkPolicy').find((p) => p['metadata'].name.endsWith('-public'))!;
    expect(publicPolicy['spec'].ingress[0].ports).toEqual([{ port: 'http', protocol: 'TCP' }]);
  });

  it('Gateway API: HTTPRoutes route the Ingress\'s hosts and paths to the http ports only, the webhook path exactly', () => {
    const parentRefs = [{ name: 'public', namespace: 'gateway-system', sectionName: 'https' }];
    const set = { name: 'httpRoute', objects: renderChart(CHART, { values: { httpRoute: { enabled: true, parentRefs } } }).documents };
    expect(schemaProblems(set)).toEqual([]);
    const routes = ofKind(set, 'HTTPRoute');
    const paths = routes.flatMap((r) =>
      r['spec'].rules.flatMap((rule: Obj) => rule.matches.map((m: Obj) => `${r['spec'].hostnames.join()} ${m.path.type} ${m.path.value} -> ${rule.backendRefs.map((b: Obj) => `${b.name}:${b.port}`).join()}`)),
    );
    expect(paths).toEqual([
      'api.flagship.example.com Exact /webhooks/stripe -> flagship-billing-worker:3002',
      'api.flagship.example.com PathPrefix / -> flagship-management-api:3000',
      'gateway.flagship.example.com PathPrefix / -> flagship-ai-gateway:3001',
    ]);
    expect(routes.map((r) => r['spec'].parentRefs)).toEqual([parentRefs, parentRefs]);
    // Each backend port is its Service's http port, never the metrics one.
    for (const r of routes) {
      for (const b of r['spec'].rules.flatMap((rule: Obj) => rule.backendRefs)) {
        const service = ofKind(set, 'Service').find((x) => x['metadata'].name === b.name)!;
        expect(service['spec'].ports.find((p: Obj) => p.port === b.port).name).toBe('http');
      }
    }
    expect(() => renderChart(CHART, { values: { httpRoute: { enabled: true } } })).toThrow("at '/httpRoute/parentRefs': minItems: got 0, want 1");
  });

  it('PodMonitor: the apps\' pods on their metrics port, not the Job\'s or helm test\'s; Prometheus may reach that port', () => {
    const set = { name: 'podMonitor', objects: renderChart(CHART, { values: { podMonitor: { enabled: true } } }).documents };
    expect(schemaProblems(set)).toEqual([]);
    const monitor = ofKind(set, 'PodMonitor')[0];
    expect(monitor['spec'].podMetricsEndpoints).toEqual([{ port: 'metrics', path: '/metrics', interval: '30s', honorLabels: true }]);
    const pods = [...ofKind(set, 'Deployment'), ...ofKind(set, 'Job')].map((o) => o['spec'].template.metadata.labels as Record<string, string>);
    const selected = pods.filter((l) => matchesSelector(monitor['spec'].selector, l));
    expect(selected.map((l) => l['app.kubernetes.io/component']).sort()).toEqual(workloads(set).map((w) => w.component).sort());
    for (const w of workloads(set)) expect(reachableFrom(set, w.deployment['spec'].template.metadata.labels)).toContain('namespace:monitoring');
    const metricsPolicy = ofKind(set, 'NetworkPolicy').find((p) => p['metadata'].name.endsWith('-metrics'))!;
    expect(metricsPolicy['spec'].ingress[0].ports).toEqual([{ port: 'metrics', protocol: 'TCP' }]);
  });

  it('egress destinations are values: in-cluster Postgres by pod labels, NodeLocal DNS by address, more for every app; off with egress.enabled false', () => {
    const egress = {
      dns: [{ ipBlocks: [{ cidr: '169.254.20.10/32' }], ports: [53] }],
      postgres: [{ namespaces: ['databases'], podSelector: { app: 'postgres' }, ports: [5432] }],
      extra: [{ to: [{ ipBlock: { cidr: '10.20.0.0/16' } }], ports: [{ port: 4317, protocol: 'TCP' }] }],
    };
    const set = { name: 'egress values', objects: renderChart(CHART, { values: { networkPolicy: { egress } } }).documents };
    expect(schemaProblems(set)).toEqual([]);
    const gateway = workloads(set).find((w) => w.app === 'ai-gateway')!;
    expect(egressOf(set, gateway.deployment['spec'].template.metadata.labels)).toEqual(
      expect.arrayContaining(['ipBlock:169.254.20.10/32 UDP/53', 'namespace:databases pods:{"app":"postgres"} TCP/5432', 'ipBlock:10.20.0.0/16 TCP/4317']),
    );
    expect(egressOf(set, gateway.deployment['spec'].template.metadata.labels)).not.toContain('ipBlock:10.0.0.0/8 TCP/5432');
    const off = { name: 'egress off', objects: renderChart(CHART, { values: { networkPolicy: { egress: { enabled: false } } } }).documents };
    expect(ofKind(off, 'NetworkPolicy').find((p) => p['metadata'].name.endsWith('-default-deny'))!['spec'].policyTypes).toEqual(['Ingress']);
    for (const w of workloads(off)) expect(egressOf(off, w.deployment['spec'].template.metadata.labels)).toEqual(['anything']);
  });

  it('tracing: off by default (no OTEL_ variable, no egress to a collector); with tracing.endpoint every app gets what its env schema reads and may reach the collector, the Job neither', () => {
    const otel = (env: Record<string, string>) => Object.keys(env).filter((k) => k.startsWith('OTEL_'));
    const collector = 'namespace:observability TCP/4318';
    const off = { name: 'tracing off', objects: renderChart(CHART, { valuesFiles: [VALUES_FILES.production] }).documents };
    for (const w of workloads(off)) {
      expect([w.component, otel(w.env)]).toEqual([w.component, []]);
      expect(egressOf(off, w.deployment['spec'].template.metadata.labels)).not.toContain(collector);
    }
    const values = { tracing: { endpoint: 'http://otel-collector.observability:4318', resourceAttributes: { 'deployment.environment.name': 'production', 'service.namespace': 'flagship' } } };
    const on = { name: 'tracing on', objects: renderChart(CHART, { valuesFiles: [VALUES_FILES.production], values }).documents };
    expect(schemaProblems(on)).toEqual([]);
    const all = workloads(on);
    expect(all.length).toBeGreaterThanOrEqual(4);
    for (const w of all) {
      expect([w.component, w.env]).toEqual([
        w.component,
        expect.objectContaining({
          OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel-collector.observability:4318',
          OTEL_TRACES_SAMPLER: 'parentbased_local_ratio',
          OTEL_TRACES_SAMPLER_ARG: '0.1',
          OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=production,service.namespace=flagship',
        }),
      ]);
      expect([...w.problems, ...startupProblems(on, w, contractOf(w.app)).problems, ...unknownVariables(on, w, contractOf(w.app))]).toEqual([]);
      expect(egressOf(on, w.deployment['spec'].template.metadata.labels)).toContain(collector);
    }
    for (const job of ofKind(on, 'Job')) expect(egressOf(on, job['spec'].template.metadata.labels)).not.toContain(collector);
  });

  it('migrations.mode job: a plain Job whose name changes with what it runs, not from one rendering to the next', () => {
    const job = (values: Record<string, unknown>) => ofKind({ name: 'job', objects: renderChart(CHART, { values: { migrations: { mode: 'job' }, ...values } }).documents }, 'Job')[0];
    const a = job({});
    expect(a['metadata'].annotations['helm.sh/hook']).toBeUndefined();
    expect(job({})['metadata'].name).toBe(a['metadata'].name);
    expect(job({ image: { tag: '0.1.1' } })['metadata'].name).not.toBe(a['metadata'].name);
    expect(job({ migrations: { mode: 'job', lockTimeout: '30s' } })['metadata'].name).not.toBe(a['metadata'].name);
  });

  it("the migration Job's lock timeout reaches Postgres: its sessions run with lock_timeout (PGOPTIONS, through the apps' own DataSource)", async () => {
    const env = ofKind(targets[0], 'Job')[0]['spec'].template.spec.containers[0].env as Obj[];
    const pgoptions = env.find((e) => e.name === 'PGOPTIONS')!.value as string;
    const before = process.env['PGOPTIONS'];
    process.env['PGOPTIONS'] = pgoptions;
    const ds = createDataSource({ url: 'postgres://postgres@127.0.0.1:5432/postgres', poolSize: 1, applicationName: 'flagship-migrate', queryTimeoutMs: 0 });
    try {
      await ds.initialize();
      expect(await ds.query('SHOW lock_timeout')).toEqual([{ lock_timeout: '10s' }]);
    } finally {
      if (ds.isInitialized) await ds.destroy();
      if (before === undefined) delete process.env['PGOPTIONS'];
      else process.env['PGOPTIONS'] = before;
    }
  });

  it('autoscaling beyond CPU: more HPA metrics after CPU (the gateway), or a KEDA ScaledObject instead of the HPA (orep-server), floors and PDBs kept', () => {
    const perPod = { type: 'Pods', pods: { metric: { name: 'gateway_requests_in_progress' }, target: { type: 'AverageValue', averageValue: '50' } } };
    const prometheus = { type: 'prometheus', metadata: { serverAddress: 'http://prometheus.monitoring:9090', query: 'sum(x)', threshold: '5000' } };
    const set = {
      name: 'autoscaling',
      objects: renderChart(CHART, {
        valuesFiles: [VALUES_FILES.production],
        values: { apps: { 'ai-gateway': { autoscaling: { metrics: [perPod] } } }, orepServer: { autoscaling: { keda: { enabled: true, triggers: [prometheus] } } } },
      }).documents,
    };
    expect(schemaProblems(set)).toEqual([]);
    expect(wiringProblems(set)).toEqual([]);
    const gateway = ofKind(set, 'HorizontalPodAutoscaler').find((h) => h['metadata'].name === 'flagship-ai-gateway')!;
    expect(gateway['spec'].metrics.map((m: Obj) => m.type)).toEqual(['Resource', 'Pods']);
    expect(gateway['spec'].metrics[1]).toEqual(perPod);
    expect(ofKind(set, 'HorizontalPodAutoscaler').map((h) => h['metadata'].name)).not.toContain('flagship-orep-acme-production');
    const scaled = ofKind(set, 'ScaledObject');
    expect(scaled.map((o) => [o['spec'].scaleTargetRef.name, o['spec'].minReplicaCount, o['spec'].maxReplicaCount, o['spec'].triggers.map((t: Obj) => t.type)])).toEqual([
      ['flagship-orep-acme-production', 3, 10, ['cpu', 'prometheus']],
    ]);
    expect(ofKind(set, 'Deployment').find((d) => d['metadata'].name === 'flagship-orep-acme-production')!['spec'].replicas).toBeUndefined();
    expect(ofKind(set, 'PodDisruptionBudget').map((p) => p['metadata'].name)).toContain('flagship-orep-acme-production');
    // What the check catches: an HPA beside the ScaledObject.
    const both = { name: 'both', objects: [...set.objects, { ...gateway, metadata: { name: 'extra' }, spec: { ...gateway['spec'], scaleTargetRef: scaled[0]['spec'].scaleTargetRef } }] };
    expect(wiringProblems(both)).toEqual(['both: Deployment/flagship-orep-acme-production has both an HPA and a ScaledObject, which would fight']);
  });

  it("the gateway drains for its longest request: SHUTDOWN_GRACE_MS and terminationGracePeriodSeconds follow PROVIDER_TOTAL_TIMEOUT_MS", () => {
    const grace = (values?: Record<string, unknown>) =>
      workloads({ name: 'grace', objects: renderChart(CHART, values ? { values } : {}).documents }).map((w) => [
        w.component,
        w.env['SHUTDOWN_GRACE_MS'],
        w.env['PROVIDER_TOTAL_TIMEOUT_MS'],
        w.deployment['spec'].template.spec.terminationGracePeriodSeconds,
      ]);
    // 300 s of requests plus 10 s to cut and bill what is left; preStop 5 s before SIGTERM, 5 s after.
    expect(grace()).toEqual(expect.arrayContaining([['ai-gateway', '310000', '300000', 320], ['management-api', '10000', undefined, 20]]));
    const longer = grace({ apps: { 'ai-gateway': { config: { PROVIDER_TOTAL_TIMEOUT_MS: '600000' } } }, gatewayDrainMarginMs: 20000 });
    expect(longer).toEqual(expect.arrayContaining([['ai-gateway', '620000', '600000', 630], ['billing-worker', '10000', undefined, 20]]));
    // A short total time-out never shortens the gateway below every app's shutdownGraceMs.
    expect(grace({ apps: { 'ai-gateway': { config: { PROVIDER_TOTAL_TIMEOUT_MS: '1000' } } } })).toEqual(expect.arrayContaining([['ai-gateway', '11000', '1000', 21]]));
  });

  it('a changed ConfigMap rolls the pods (checksum annotation)', () => {
    const checksum = (objects: Obj[]) => ofKind({ name: '', objects }, 'Deployment')[0]['spec'].template.metadata.annotations['checksum/config'];
    expect(checksum(renderChart(CHART).documents)).not.toBe(checksum(renderChart(CHART, { values: { logLevel: 'debug' } }).documents));
  });

  it('the schema check refuses objects the API server would refuse, naming the field', () => {
    const deployment = () => structuredClone(ofKind(targets[0], 'Deployment')[0]);
    const portAsString = deployment();
    portAsString['spec'].template.spec.containers[0].ports[0].containerPort = '3000';
    const noContainers = deployment();
    delete noContainers['spec'].template.spec.containers;
    const badPolicy = deployment();
    badPolicy['spec'].template.spec.restartPolicy = 'Sometimes';
    const unknownKind = { apiVersion: 'apps/v1', kind: 'Deploymnt', metadata: { name: 'x' } };
    const badName = { ...deployment(), metadata: { name: 'Flagship_API' } };
    // Misspelt fields, which the API server's strict field validation refuses; a new key of a map
    // (labels, annotations) is not one.
    const misspelt = deployment();
    misspelt['spec'].template.spec.toleration = [];
    misspelt['spec'].template.spec.containers[0].lifecycle.preStop.sleeep = { seconds: 5 };
    misspelt['spec'].template.metadata.labels['team'] = 'platform';
    misspelt['spec'].template.metadata.annotations['example.com/any'] = 'x';
    // Custom resources: a misspelt field, a Service backend without its port.
    const route = {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'HTTPRoute',
      metadata: { name: 'r' },
      spec: { parentRefs: [{ name: 'gw' }], rules: [{ matches: [{ path: { type: 'Prefix', value: '/' } }], backendRefs: [{ name: 'svc' }] }], hostname: ['x'] },
    };
    const monitor = { apiVersion: 'monitoring.coreos.com/v1', kind: 'PodMonitor', metadata: { name: 'm' }, spec: { selector: {}, podMetricsEndpoint: [] } };
    expect(schemaProblems({ name: 'broken', objects: [route, monitor] })).toEqual([
      "broken: HTTPRoute/r: /spec must NOT have additional properties (hostname)",
      'broken: HTTPRoute/r: /spec/rules/0/matches/0/path/type must be equal to one of the allowed values',
      "broken: HTTPRoute/r: /spec/rules/0/backendRefs/0 must have required property 'port'",
      "broken: PodMonitor/m: /spec must have required property 'podMetricsEndpoints'",
      "broken: PodMonitor/m: /spec must NOT have additional properties (podMetricsEndpoint)",
    ]);
    expect(schemaProblems({ name: 'broken', objects: [portAsString, noContainers, badPolicy, unknownKind, badName, misspelt] })).toEqual([
      expect.stringContaining('containers/0/ports/0/containerPort must be integer'),
      expect.stringContaining('spec/template/spec must have required property containers'),
      expect.stringContaining('restartPolicy must be equal to one of the allowed values'),
      'broken: no Kubernetes schema for apps/v1 Deploymnt',
      expect.stringContaining('the name is not a DNS label'),
      expect.stringMatching(/Deployment\/flagship-\S+: unknown field \/spec\/template\/spec\/containers\/0\/lifecycle\/preStop\/sleeep$/),
      expect.stringMatching(/Deployment\/flagship-\S+: unknown field \/spec\/template\/spec\/toleration$/),
    ]);
  });

  it('the checks name what is wrong (each of these renders, and must not deploy)', () => {
    // Past the schema, which refuses the first two as well: the checks below catch them on their own
    // (an overlay or a hand-written manifest has no schema).
    const render = (values: Record<string, unknown>) => ({ name: 'what-if', objects: renderChart(CHART, { values, skipSchemaValidation: true }).documents });
    const startup = (set: ManifestSet) => workloads(set).flatMap((w) => startupProblems(set, w, contractOf(w.app)).problems);
    // No Secret: orep-server's token has no source.
    const noSecret = render({ secrets: { existingSecret: '' }, postgres: { url: 'postgres://db/flagship' }, redis: { url: 'redis://r:6379' } });
    expect(startup(noSecret)).toEqual([
      expect.stringMatching(/orep-example-production \(orep-server\) requires OREP_AUTH_TOKEN at start-up; the manifests do not provide it/),
      expect.stringMatching(/orep-example-production \(orep-server\) refuses to start: OREP_AUTH_TOKEN is required/),
    ]);
    // The dev identity provider in production: management-api's own validation refuses it.
    expect(startup(render({ idp: { mode: 'dev' } }))).toEqual([expect.stringMatching(/management-api \(management-api\) refuses to start: IDP_MODE=dev/)]);
    // A probe on a path no app serves, and a port the app does not listen on.
    const set = render({});
    const api = workloads(set).find((w) => w.app === 'management-api')!;
    api.container['readinessProbe'].httpGet.path = '/ready';
    api.container['ports'][0].containerPort = 8080;
    const contract = contractOf('management-api');
    const problems = podProblems(set, api, contract, nestGetRoutes('management-api', startupProblems(set, api, contract).config!), true);
    expect(problems).toEqual([
      expect.stringContaining('containerPort 8080 but the app listens on PORT=3000'),
      expect.stringContaining('containerPort 8080 differs'),
      expect.stringContaining('readinessProbe requests /ready, expected /readyz'),
      expect.stringContaining('readinessProbe requests /ready, which the app does not serve'),
    ]);
    // A gateway whose grace does not cover its longest request (an overlay raising PROVIDER_TOTAL_TIMEOUT_MS alone).
    const gateway = workloads(set).find((w) => w.app === 'ai-gateway')!;
    gateway.env['PROVIDER_TOTAL_TIMEOUT_MS'] = '900000';
    const gatewayContract = contractOf('ai-gateway');
    expect(podProblems(set, gateway, gatewayContract, undefined, true)).toEqual([
      expect.stringContaining('SHUTDOWN_GRACE_MS 310000 does not cover the longest request (PROVIDER_TOTAL_TIMEOUT_MS 900000)'),
    ]);
    // Variables the app does not read: one in the ConfigMap, one from the Secret its code never names.
    const typo = render({
      apps: {
        'management-api': {
          config: { PUBLIC_BASE_ULR: 'https://x' },
          secretEnv: [{ name: 'OAUTH_SIGNING_KEY', optional: true }, { name: 'OAUTH_SIGNING_KEY_OLD', optional: true }],
        },
      },
    });
    expect(workloads(typo).flatMap((w) => unknownVariables(typo, w, contractOf(w.app)))).toEqual([
      expect.stringContaining('is given PUBLIC_BASE_ULR'),
      expect.stringContaining('is given OAUTH_SIGNING_KEY_OLD'),
    ]);
  });

  describe('per-app options (tools/k8s/fixtures/values-every-option.yaml)', () => {
    const values = parseYaml(readFileSync(join(__dirname, 'fixtures/values-every-option.yaml'), 'utf8')) as Record<string, any>;
    const set = { name: 'every option', objects: renderChart(CHART, { valuesFiles: [join(__dirname, 'fixtures/values-every-option.yaml')] }).documents };
    const pod = (component: string) => ofKind(set, 'Deployment').find((d) => d['spec'].template.metadata.labels['app.kubernetes.io/component'] === component)!['spec'].template as Obj;
    const api = values['apps']['management-api'];

    it('the options are accepted by values.schema.json and render valid Kubernetes objects, pods still restricted', () => {
      const validate = valuesValidator();
      expect(validate(readChartValues(CHART, { valuesFiles: [join(__dirname, 'fixtures/values-every-option.yaml')] })) ? [] : validate.errors).toEqual([]);
      expect(schemaProblems(set)).toEqual([]);
      const pods = [...ofKind(set, 'Deployment'), ...ofKind(set, 'Job')].map((o) => [o['metadata'].name, o['spec'].template.spec] as const);
      expect(pods.flatMap(([name, spec]) => securityProblems(name, spec))).toEqual([]);
    });

    it('placement: priorityClassName, nodeSelector, affinity, tolerations go to the pod spec of their app only', () => {
      const spec = pod('management-api').spec;
      expect([spec.priorityClassName, spec.nodeSelector, spec.affinity, spec.tolerations]).toEqual([api.priorityClassName, api.nodeSelector, api.affinity, api.tolerations]);
      expect(pod('ai-gateway').spec).not.toHaveProperty('nodeSelector');
      expect(pod('orep-example-production').spec.tolerations).toEqual(values['orepServer'].tolerations);
      const job = ofKind(set, 'Job')[0]['spec'].template;
      expect(job.spec.nodeSelector).toEqual(values['migrations'].nodeSelector);
      expect(job.metadata.labels).toMatchObject(values['migrations'].podLabels);
    });

    it('pod annotations and labels are added beside the chart\'s own, which the schema protects', () => {
      const t = pod('management-api');
      expect(t.metadata.annotations).toEqual({ ...api.podAnnotations, 'checksum/config': expect.stringMatching(/^[0-9a-f]{64}$/) });
      expect(t.metadata.labels).toMatchObject({ ...api.podLabels, 'app.kubernetes.io/component': 'management-api' });
      const validate = valuesValidator();
      const base = readChartValues(CHART);
      for (const podLabels of [{ 'app.kubernetes.io/component': 'x' }, { 'flagship.io/database-client': 'false' }, { 'not a label': 'x' }]) {
        expect([podLabels, validate(mergeValues(base, { apps: { 'ai-gateway': { podLabels } } }))]).toEqual([podLabels, false]);
      }
      expect(validate(mergeValues(base, { apps: { 'ai-gateway': { podAnnotations: { 'checksum/config': 'x' } } } }))).toBe(false);
    });

    it('extraEnv after the secret variables, extraEnvFrom after the ConfigMap, extra volumes beside /tmp', () => {
      const c = pod('management-api').spec.containers[0];
      expect(c.env.slice(-2)).toEqual(api.extraEnv);
      expect(c.envFrom).toEqual([{ configMapRef: { name: 'flagship-management-api' } }, ...api.extraEnvFrom]);
      expect(c.volumeMounts).toEqual([{ name: 'tmp', mountPath: '/tmp' }, ...api.extraVolumeMounts]);
      expect(pod('management-api').spec.volumes.map((v: Obj) => v.name)).toEqual(['tmp', 'ca-bundle']);
      const job = ofKind(set, 'Job')[0]['spec'].template.spec.containers[0];
      expect(job.env.map((e: Obj) => e.name)).toEqual(['NODE_ENV', 'DATABASE_URL', 'PGOPTIONS', 'PGSSLMODE']);
    });

    it('sidecars run as native sidecars (init containers that restart Always), the app stays the first container', () => {
      const spec = pod('management-api').spec;
      expect(spec.initContainers).toEqual([{ ...api.sidecars[0], restartPolicy: 'Always' }]);
      expect(spec.containers.map((c: Obj) => c.name)).toEqual(['management-api']);
      // A sidecar that would break the restricted profile is refused by the schema.
      const validate = valuesValidator();
      const base = readChartValues(CHART);
      const sidecar = api.sidecars[0];
      for (const bad of [
        { ...sidecar, securityContext: { ...sidecar.securityContext, allowPrivilegeEscalation: true } },
        { ...sidecar, securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['NET_RAW'] } } },
        { ...sidecar, resources: { requests: { cpu: '10m', memory: '10Mi' } } },
        { ...sidecar, restartPolicy: 'Never' },
      ]) {
        expect(validate(mergeValues(base, { apps: { 'ai-gateway': { sidecars: [bad] } } }))).toBe(false);
      }
    });

    it('image.digest wins over the tag, per app; the migration Job runs management-api\'s', () => {
      expect(pod('management-api').spec.containers[0].image).toBe(`ghcr.io/example/flagship/management-api@${api.image.digest}`);
      expect(pod('ai-gateway').spec.containers[0].image).toBe('ghcr.io/example/flagship/ai-gateway:0.1.0');
      expect(pod('orep-example-production').spec.containers[0].image).toBe(`ghcr.io/example/flagship/orep-server@${values['orepServer'].image.digest}`);
      expect(ofKind(set, 'Job')[0]['spec'].template.spec.containers[0].image).toBe(`ghcr.io/example/flagship/management-api@${api.image.digest}`);
      const validate = valuesValidator();
      expect(validate(mergeValues(readChartValues(CHART), { apps: { 'ai-gateway': { image: { digest: 'latest' } } } }))).toBe(false);
    });

    it('topology spread: zones then nodes, ScheduleAnyway, for replicated workloads by default; a list replaces it, [] removes it', () => {
      const spread = (objects: Obj[], component: string) =>
        ofKind({ name: '', objects }, 'Deployment').find((d) => d['spec'].template.metadata.labels['app.kubernetes.io/component'] === component)!['spec'].template.spec.topologySpreadConstraints;
      const defaults = renderChart(CHART).documents;
      expect(spread(defaults, 'management-api')).toEqual(
        ['topology.kubernetes.io/zone', 'kubernetes.io/hostname'].map((topologyKey) => ({
          maxSkew: 1,
          topologyKey,
          whenUnsatisfiable: 'ScheduleAnyway',
          labelSelector: { matchLabels: { 'app.kubernetes.io/instance': 'flagship', 'app.kubernetes.io/component': 'management-api' } },
          matchLabelKeys: ['pod-template-hash'],
        })),
      );
      // One pod (development): nothing to spread.
      expect(spread(renderChart(CHART, { valuesFiles: [VALUES_FILES.development] }).documents, 'management-api')).toBeUndefined();
      expect(spread(set.objects, 'ai-gateway')).toEqual(values['apps']['ai-gateway'].topologySpreadConstraints);
      expect(spread(set.objects, 'billing-worker')).toBeUndefined();
    });
  });

  it('PodDisruptionBudgets let unhealthy pods be evicted (a crash-looping pod never blocks a drain); preStop is the kubelet\'s sleep', () => {
    const pdbs = ofKind(targets[0], 'PodDisruptionBudget');
    expect(pdbs.length).toBe(ofKind(targets[0], 'Deployment').length);
    for (const pdb of pdbs) expect([pdb['metadata'].name, pdb['spec'].unhealthyPodEvictionPolicy]).toEqual([pdb['metadata'].name, 'AlwaysAllow']);
    for (const w of workloads(targets[0])) {
      expect([w.component, w.container['lifecycle']]).toEqual([w.component, { preStop: { sleep: { seconds: 5 } } }]);
    }
    // preStopSeconds 0: no hook at all (a sleep of 0 s is refused before Kubernetes 1.33).
    const none = workloads({ name: 'no pause', objects: renderChart(CHART, { values: { preStopSeconds: 0 } }).documents });
    expect(none.map((w) => w.container['lifecycle'])).toEqual(none.map(() => undefined));
  });

  it('merging values: a later file replaces lists and scalars, merges maps, null removes', () => {
    expect(mergeValues({ a: { b: 1, c: [1, 2] }, d: 1 }, { a: { c: [3] }, d: null })).toEqual({ a: { b: 1, c: [3] } });
  });
});
