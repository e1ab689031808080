/**
 * The images, checked without a Docker engine: compose builds only apps that exist, with commands
 * their build produces, and each image's command is run here from the same file layout the
 * Dockerfile produces (the built dist/ copied to dist/, node_modules beside it), as a process, against real Postgres and Redis: with the environment the Helm chart's
 * production values give it, answering the probes its Deployment declares. Needs `npm run build`
 * first (npm test does it). The manifests, the Dockerfile's stages, compose's environment and the
 * fakes' image commands are checked in tools/k8s.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { parse } from 'yaml';
import { runMigrations } from '@flagship/persistence';
import { createTestEnvironment, freePort, http, startTlsPostgres, type TlsPostgres, waitFor, type TestEnvironment } from '@flagship/testing';
import { renderChart } from '../k8s/helm';
import { ofKind, workloads } from '../k8s/manifest-checks';

const root = join(__dirname, '..', '..');
const APPS = ['management-api', 'ai-gateway', 'billing-worker', 'orep-server'];
/** The access-token signing key a production management-api requires (the Secret's OAUTH_SIGNING_KEY). */
const SIGNING_KEY = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

interface ComposeService {
  build?: { context: string; dockerfile: string; args?: Record<string, string> };
  command?: string[];
}

// merge: compose files share settings through YAML merge keys (<<), as Docker Compose reads them.
const compose = parse(readFileSync(join(root, 'docker/compose.yaml'), 'utf8'), { merge: true }) as { services: Record<string, ComposeService> };

const dockerfile = readFileSync(join(root, 'docker/Dockerfile'), 'utf8');
/** The last stage's (the runtime's) CMD, `node dist/main.js`: what each app's container runs. */
const IMAGE_CMD = JSON.parse(/^CMD (\[.*\])$/m.exec(dockerfile.slice(dockerfile.lastIndexOf('\nFROM ')))![1]) as string[];

/** Lays out one image's /app as the Dockerfile does: its build stage's docker/image-layout.sh from the built dist/ into dist/. */
function imageLayout(app: string): string {
  const dir = mkdtempSync(join(tmpdir(), `image-${app}-`));
  const layout = spawnSync('sh', [join(root, 'docker/image-layout.sh'), app, join(root, 'dist'), join(dir, 'dist')], { encoding: 'utf8' });
  expect([layout.status, layout.stderr]).toEqual([0, '']);
  // IMAGE_NODE_MODULES: a production-only node_modules laid out as the Dockerfile's prod-deps stage
  // leaves it, to run the commands without the devDependencies; by default the repository's.
  symlinkSync(process.env['IMAGE_NODE_MODULES'] ?? join(root, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

function run(cwd: string, args: string[], env: NodeJS.ProcessEnv): { child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (c) => (out += c));
  child.stderr!.on('data', (c) => (out += c));
  return { child, output: () => out };
}

describe('docker recipe', () => {
  it('builds every app of compose through the one Dockerfile, with commands that exist in the build', () => {
    // The fakes' services build the Dockerfile's `fakes` target, checked in tools/k8s/docker.e2e-spec.ts.
    const built = Object.entries(compose.services).filter(([, s]) => s.build?.args?.['APP']);
    // migrate and seed: management-api's image with another command.
    expect(built.map(([, s]) => s.build!.args!['APP']).sort()).toEqual([...APPS, 'management-api', 'management-api'].sort());
    for (const [name, svc] of built) {
      expect(svc.build!.dockerfile).toBe('docker/Dockerfile');
      const app = svc.build!.args!['APP'];
      const project = JSON.parse(readFileSync(join(root, 'apps', app, 'project.json'), 'utf8'));
      expect(project.targets.build).toBeDefined();
      expect(svc.command?.[0]).toBe('node');
      const script = svc.command![1].replace(/^dist\//, '');
      expect([name, existsSync(join(root, 'dist/apps', app, 'apps', app, 'src', script))]).toEqual([name, true]);
    }
  });
});

describe('each image command, run as a process', () => {
  let te: TestEnvironment;
  const layouts: string[] = [];
  // The production values connect with TLS (verify-full, the CA bundle of a Secret): their runs go
  // to a Postgres of this file's own that takes TCP only over TLS, its certificate signed by its `ca`.
  let tlsPostgres: TlsPostgres;

  beforeAll(async () => {
    te = await createTestEnvironment();
    tlsPostgres = await startTlsPostgres('e2e-database-password');
    await runMigrations(tlsPostgres.pg.url, { mode: 'verify-full', caFile: tlsPostgres.ca.certFile });
  }, 30_000);

  afterAll(async () => {
    for (const d of layouts) rmSync(d, { recursive: true, force: true });
    await te?.teardown();
    await tlsPostgres?.destroy();
  });

  it.each(APPS)('%s starts, answers /healthz and /readyz, and exits 0 on SIGTERM', async (app) => {
    const dir = imageLayout(app);
    layouts.push(dir);
    const port = await freePort();
    expect(IMAGE_CMD[0]).toBe('node');
    const { child, output } = run(dir, IMAGE_CMD.slice(1), {
      ...te.env,
      PORT: String(port),
      OREP_PORT: String(port),
      OREP_AUTH_TOKEN: 'e2e-token',
    });
    try {
      await waitFor(async () => (await http(`http://127.0.0.1:${port}/healthz`)).status === 200, 20000, 100);
      const ready = await http(`http://127.0.0.1:${port}/readyz`);
      expect([ready.status, output()]).toEqual([200, expect.any(String)]);
    } finally {
      child.kill('SIGTERM');
    }
    const [code] = await once(child, 'exit');
    expect(code).toBe(0);
  });

  /** What the Helm chart's production values give each app, as the Deployment's container sees it. */
  const chartProduction = {
    name: 'chart values-production.yaml',
    objects: renderChart(join(root, 'k8s/helm/flagship'), { valuesFiles: [join(root, 'k8s/helm/flagship/values-production.yaml')] }).documents,
  };
  const production = workloads(chartProduction);

  /** Runs the program of the chart's `helm test` pod of this app against it, as `helm test` would. */
  function helmTestPod(app: string, target: string, secrets: NodeJS.ProcessEnv): { status: number | null; output: string } {
    const pod = ofKind(chartProduction, 'Pod').find((p) => p['metadata'].labels['app.kubernetes.io/name'] === app)!;
    const c = pod['spec'].containers[0] as { command: string[]; env: Array<{ name: string; value?: string }> };
    expect(c.command[0]).toBe('node');
    const podEnv = Object.fromEntries(c.env.filter((e) => e.value !== undefined).map((e) => [e.name, e.value]));
    const out = spawnSync(process.execPath, c.command.slice(1), { env: { PATH: process.env['PATH'], ...podEnv, ...secrets, TARGET: target }, encoding: 'utf8', timeout: 30000 });
    return { status: out.status, output: out.stdout + out.stderr };
  }

  it.each(APPS)('%s, given the chart production environment, answers the probes its Deployment declares, and passes its helm test', async (app) => {
    const w = production.find((x) => x.app === app)!;
    const c = w.container;
    const port = await freePort();
    const env: NodeJS.ProcessEnv = { PATH: process.env['PATH'], ...w.env };
    // A Secret's value is not known here: optional ones are left out, others get a test value.
    for (const name of w.fromSecret) {
      if (w.optional.has(name)) delete env[name];
      else env[name] = `e2e-${name.toLowerCase()}`;
    }
    // Optional in the Secret (it may come from Secrets Manager instead), but production needs a signing key.
    if (app === 'management-api') env['OAUTH_SIGNING_KEY'] = SIGNING_KEY;
    // The chart's TLS settings, with the CA bundle of the test's server where the Secret would be mounted.
    expect([env['DATABASE_SSL_MODE'], env['DATABASE_SSL_CA_FILE']]).toEqual(['verify-full', '/etc/flagship/postgres-ca/ca.crt']);
    Object.assign(env, {
      // This test file's TLS-only database and Redis prefix; a free loopback port instead of the container's.
      DATABASE_URL: tlsPostgres.pg.url,
      DATABASE_SSL_CA_FILE: tlsPostgres.ca.certFile,
      REDIS_URL: te.env['REDIS_URL'],
      REDIS_KEY_PREFIX: te.env['REDIS_KEY_PREFIX'],
      LOG_LEVEL: 'silent',
      [app === 'orep-server' ? 'OREP_PORT' : 'PORT']: String(port),
      [app === 'orep-server' ? 'OREP_HOST' : 'HOST']: '127.0.0.1',
      METRICS_PORT: String(await freePort()),
      // Nothing leaves loopback from a test: no AWS Secrets Manager, an identity provider that is never asked.
      SECRETS_MANAGER_SECRET_ID: '',
      ...(env['IDP_JWKS_URI'] ? { IDP_JWKS_URI: 'http://127.0.0.1:9/jwks', IDP_ISSUER: 'http://127.0.0.1:9' } : {}),
      // The helm test refuses a billing-worker that cannot take Stripe's webhooks.
      ...(app === 'billing-worker' ? { STRIPE_WEBHOOK_SECRET: 'whsec_e2e' } : {}),
    });
    expect(env['NODE_ENV']).toBe('production');
    const dir = imageLayout(app);
    layouts.push(dir);
    const { child, output } = run(dir, IMAGE_CMD.slice(1), env);
    const probes = ['startupProbe', 'livenessProbe', 'readinessProbe'].map((p) => c[p].httpGet.path as string);
    let stopping = 0;
    try {
      await waitFor(async () => (await http(`http://127.0.0.1:${port}${probes[0]}`)).status === 200, 20000, 100);
      for (const path of probes) {
        const res = await http(`http://127.0.0.1:${port}${path}`);
        expect([path, res.status, res.status === 200 ? '' : output()]).toEqual([path, 200, '']);
      }
      const test = helmTestPod(app, `http://127.0.0.1:${port}`, { OREP_AUTH_TOKEN: env['OREP_AUTH_TOKEN'] });
      expect([test.status, test.output]).toEqual([0, expect.stringMatching(/: 200\n.*: (200|401|400)\n$/)]);
    } finally {
      stopping = Date.now();
      child.kill('SIGTERM');
    }
    const [code] = await once(child, 'exit');
    expect(code).toBe(0);
    // Kubernetes kills the pod terminationGracePeriodSeconds after SIGTERM: the drain fits inside.
    expect(Date.now() - stopping).toBeLessThan(w.deployment['spec'].template.spec.terminationGracePeriodSeconds * 1000);
  });

  it('management-api, given the chart production environment without an access-token signing key, stops at start-up saying so', async () => {
    const w = production.find((x) => x.app === 'management-api')!;
    const env: NodeJS.ProcessEnv = { PATH: process.env['PATH'], ...w.env };
    for (const name of w.fromSecret) {
      if (w.optional.has(name)) delete env[name];
      else env[name] = `e2e-${name.toLowerCase()}`;
    }
    Object.assign(env, {
      DATABASE_URL: tlsPostgres.pg.url,
      DATABASE_SSL_CA_FILE: tlsPostgres.ca.certFile,
      REDIS_URL: te.env['REDIS_URL'],
      REDIS_KEY_PREFIX: te.env['REDIS_KEY_PREFIX'],
      PORT: String(await freePort()),
      HOST: '127.0.0.1',
      METRICS_PORT: String(await freePort()),
      SECRETS_MANAGER_SECRET_ID: '',
      IDP_JWKS_URI: 'http://127.0.0.1:9/jwks',
      IDP_ISSUER: 'http://127.0.0.1:9',
    });
    expect(env['OAUTH_SIGNING_KEY']).toBeUndefined();
    const dir = imageLayout('management-api');
    layouts.push(dir);
    const { child, output } = run(dir, ['dist/main.js'], env);
    const [code] = await once(child, 'exit');
    expect(code).not.toBe(0);
    expect(output()).toContain('invalid configuration: OAUTH_SIGNING_KEY is required');
  });

  it('the migration command applies nothing twice', async () => {
    const dir = imageLayout('management-api');
    layouts.push(dir);
    const { child, output } = run(dir, ['dist/migrate.js'], te.env);
    const [code] = await once(child, 'exit');
    expect(code).toBe(0);
    expect(output()).toContain('schema up to date');
  });

  it("the seed command (compose's seed service) creates the demo tenant and prints the demo client", async () => {
    const dir = imageLayout('management-api');
    layouts.push(dir);
    const { child, output } = run(dir, ['dist/seed.js'], te.env);
    const [code] = await once(child, 'exit');
    expect([code, output()]).toEqual([0, expect.stringMatching(/^demo-oauth-client \S+ \S+$/m)]);
  });

  it.each([
    ['orep-server', {}, 'OREP_AUTH_TOKEN is required'],
    ['management-api', { PORT: 'abc' }, 'PORT is invalid'],
    ['ai-gateway', { DATABASE_URL: 'not a url' }, 'DATABASE_URL is invalid'],
  ])('%s refuses to start on bad config with one line naming the variable', async (app, extra, expected) => {
    const env: NodeJS.ProcessEnv = { ...te.env, ...extra };
    delete env['OREP_AUTH_TOKEN'];
    const { child, output } = run(root, [join('dist/apps', app, 'apps', app, 'src/main.js')], env);
    const [code] = await once(child, 'exit');
    expect(code).toBe(1);
    const lines = output().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(expected);
  });
});
