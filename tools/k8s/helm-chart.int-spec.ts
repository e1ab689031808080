/**
 * The chart through the real `helm` binary (tools/k8s/helm.ts): `helm lint --strict` and `helm
 * template` for the default, production and development values and every per-app option; every
 * object against the Kubernetes schemas, strict about unknown fields; every pod against the
 * restricted profile; NOTES.txt; kubeVersion. What each rendering must contain is
 * k8s-manifests.int-spec.ts'.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { ROOT } from './app-contracts';
import { helm, renderChart } from './helm';
import { type Obj, ofKind, schemaProblems, securityProblems } from './manifest-checks';

const CHART = join(ROOT, 'k8s/helm/flagship');
const setArgs = (files: string[], sets: string[] = []) => [...files.flatMap((f) => ['-f', f]), ...sets.flatMap((s) => ['--set', s])];
const helmTemplate = (files: string[]): Obj[] => renderChart(CHART, { valuesFiles: files }).documents;

const VALUES: Array<[string, string[]]> = [
  ['values.yaml', []],
  ['values-production.yaml', [join(CHART, 'values-production.yaml')]],
  ['values-development.yaml', [join(CHART, 'values-development.yaml')]],
  // Every per-app option at once, rendered validly.
  ['every option (tools/k8s/fixtures/values-every-option.yaml)', [join(__dirname, 'fixtures/values-every-option.yaml')]],
];

it('is the helm the pinned package ships', () => {
  expect(helm(['version', '--template', '{{ .Version }}']).stdout).toBe('v4.1.4');
});

describe.each(VALUES)('helm, with %s', (name, files) => {
  const objects = helmTemplate(files);

  it('lints clean (--strict: warnings fail too)', () => {
    const out = helm(['lint', CHART, '--strict', ...setArgs(files)]);
    expect([out.status, out.stderr]).toEqual([0, '']);
  });

  it('renders objects valid against the Kubernetes schemas, with no unknown field', () => {
    expect(objects.length).toBeGreaterThan(10);
    expect(schemaProblems({ name: `helm ${name}`, objects })).toEqual([]);
  });

  it('renders pods that meet the restricted Pod Security Standard checks (Deployments, Jobs and test pods)', () => {
    const pods: Array<[string, Obj]> = [
      ...[...ofKind({ name, objects }, 'Deployment'), ...ofKind({ name, objects }, 'Job')].map((o): [string, Obj] => [`${o['kind']}/${o['metadata'].name}`, o['spec'].template.spec]),
      ...ofKind({ name, objects }, 'Pod').map((o): [string, Obj] => [`Pod/${o['metadata'].name}`, o['spec']]),
    ];
    expect(pods.length).toBeGreaterThan(4);
    expect(pods.flatMap(([where, spec]) => securityProblems(`helm ${name}: ${where}`, spec))).toEqual([]);
  });
});

it('refuses a cluster older than Chart.yaml kubeVersion (the preStop sleep action needs 1.30)', () => {
  const out = helm(['template', 'flagship', CHART, '--kube-version', '1.29.5']);
  expect([out.status, out.stderr]).toEqual([1, expect.stringContaining('chart requires kubeVersion: >=1.30.0-0')]);
  expect(helm(['template', 'flagship', CHART, '--kube-version', '1.30.0']).status).toBe(0);
});

describe('helm and values.schema.json', () => {
  // Each refused for its own reason, named in helm's message.
  it.each<[string, string[], string]>([
    ['a misspelt key', ['apps.billing-worker.replica=2'], "at '/apps/billing-worker': additional properties 'replica' not allowed"],
    ['the dev identity provider in production', ['nodeEnv=production', 'idp.mode=dev'], "at '/idp/mode': value must be 'oidc'"],
    [
      'an egress destination mixing an address block with a namespace (a NetworkPolicy peer is one or the other)',
      ['networkPolicy.egress.redis[0].ipBlocks[0].cidr=10.0.0.0/8', 'networkPolicy.egress.redis[0].namespaces[0]=cache', 'networkPolicy.egress.redis[0].ports[0]=6379'],
      "at '/networkPolicy/egress/redis/0': 'anyOf' failed",
    ],
    [
      'a KEDA trigger whose metadata is not a string (KEDA reads strings)',
      ['orepServer.autoscaling.keda.enabled=true', 'orepServer.autoscaling.keda.triggers[0].type=prometheus', 'orepServer.autoscaling.keda.triggers[0].metadata.threshold=5000'],
      "at '/orepServer/autoscaling/keda/triggers/0/metadata/threshold': got number, want string",
    ],
    ['a trace sampler the OpenTelemetry SDK does not know (the apps would refuse to start)', ['tracing.sampler=sometimes'], "at '/tracing/sampler'"],
    ['an HTTPRoute attached to no Gateway', ['httpRoute.enabled=true'], "at '/httpRoute/parentRefs': minItems: got 0, want 1"],
    ['an unknown top-level key', ['postgress.url=postgres://x/y'], "additional properties 'postgress' not allowed"],
    ["an extra volume named as the chart's own", ['apps.ai-gateway.extraVolumes[0].name=tmp', 'apps.ai-gateway.extraVolumes[0].emptyDir.medium=Memory'], "at '/apps/ai-gateway/extraVolumes/0/name': 'not' failed"],
    ['a pod label the chart selects on', ['apps.ai-gateway.podLabels.app\\.kubernetes\\.io/component=x'], "invalid propertyName 'app.kubernetes.io/component'"],
    [
      'a sidecar that may escalate privileges',
      ['apps.ai-gateway.sidecars[0].name=x', 'apps.ai-gateway.sidecars[0].image=x', 'apps.ai-gateway.sidecars[0].securityContext.allowPrivilegeEscalation=true'],
      "at '/apps/ai-gateway/sidecars/0/securityContext/allowPrivilegeEscalation': value must be false",
    ],
  ])('refuses %s', (_name, sets, reason) => {
    const out = helm(['lint', CHART, ...setArgs([], sets)]);
    expect([out.status, out.stdout + out.stderr]).toEqual([1, expect.stringContaining(reason)]);
  });
});

describe('what helm tells the installer', () => {
  // --dry-run=client renders NOTES.txt as `helm install` prints it, without a cluster.
  const notes = (files: string[], sets: string[] = []) => {
    const out = helm(['install', 'flagship', CHART, '--dry-run=client', '--namespace', 'flagship', ...setArgs(files, sets)]);
    if (out.status !== 0) throw new Error(`helm install --dry-run=client failed: ${out.stderr}`);
    return out.stdout.slice(out.stdout.indexOf('NOTES:'));
  };

  it('NOTES.txt: how to check the install (helm test) and where each app answers, with the Ingress', () => {
    const text = notes([join(CHART, 'values-production.yaml')]);
    expect(text).toContain('helm test flagship -n flagship');
    expect(text).toContain('https://api.flagship.example.com');
    expect(text).toContain('http://flagship-orep-acme-production.flagship:8016');
    expect(text).toContain('AWS Secrets Manager secret "flagship/production"');
    expect(text).not.toContain('<no value>');
  });

  it('NOTES.txt: without an Ingress, the in-cluster addresses', () => {
    const text = notes([]);
    expect(text).toContain('http://flagship-management-api.flagship:3000');
    expect(text).toContain('http://flagship-ai-gateway.flagship:3001/v1');
    expect(text).not.toContain('<no value>');
  });

  it('NOTES.txt: the hosts with HTTPRoutes instead of an Ingress, the monitors, the egress hint, the plain migration Job', () => {
    const text = notes([], ['httpRoute.enabled=true', 'httpRoute.parentRefs[0].name=public', 'podMonitor.enabled=true', 'migrations.mode=job']);
    expect(text).toContain('https://api.flagship.example.com');
    expect(text).toContain('scraped by PodMonitor flagship');
    expect(text).toContain('Egress is restricted (networkPolicy.egress)');
    expect(text).toContain('plain Job beside the apps (migrations.mode job)');
    expect(text).not.toContain('<no value>');
  });

  it("Chart.yaml lists the images values.yaml runs (Artifact Hub's artifacthub.io/images)", () => {
    const chart = parseYaml(readFileSync(join(CHART, 'Chart.yaml'), 'utf8')) as { annotations: Record<string, string>; appVersion: string };
    const values = parseYaml(readFileSync(join(CHART, 'values.yaml'), 'utf8')) as { image: { repository: string; tag: string } };
    const images = (parseYaml(chart.annotations['artifacthub.io/images']) as Array<{ name: string; image: string }>).map((i) => i.image);
    const deployed = helmTemplate([]).filter((o) => o['kind'] === 'Deployment').map((d) => d['spec'].template.spec.containers[0].image as string);
    expect(images.sort()).toEqual([...new Set(deployed)].sort());
    expect(values.image.tag).toBe(chart.appVersion);
  });
});

describe('helm test pods', () => {
  // Against the real apps: tools/dev/deploy.e2e-spec.ts. Here, what a failure looks like.
  const pods = helmTemplate([]).filter((o) => o['kind'] === 'Pod' && o['metadata'].annotations?.['helm.sh/hook'] === 'test');

  it('one per app and orep-server instance, through its Service', () => {
    const targets = pods.map((p) => p['spec'].containers[0].env.find((e: Obj) => e.name === 'TARGET').value);
    expect(targets.sort()).toEqual(['http://flagship-ai-gateway:3001', 'http://flagship-billing-worker:3002', 'http://flagship-management-api:3000', 'http://flagship-orep-example-production:8016']);
  });

  it('fails naming the call, its status and the answer when the app is not healthy', async () => {
    const server = createServer((_req, res) => res.writeHead(503, { 'content-type': 'application/json' }).end('{"status":"error"}'));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const c = pods.find((p) => p['metadata'].name === 'flagship-test-management-api')!['spec'].containers[0];
      const env = Object.fromEntries(c.env.map((e: Obj) => [e.name, e.value]));
      const target = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, c.command.slice(1), { env: { PATH: process.env['PATH'], ...env, TARGET: target } });
        let stderr = '';
        child.stderr.on('data', (d) => (stderr += d));
        child.on('exit', (code) => resolve({ code, stderr }));
      });
      expect(result).toEqual({ code: 1, stderr: `GET ${target}/readyz: 503, expected 200: {"status":"error"}\n` });
    } finally {
      server.close();
    }
  });
});
