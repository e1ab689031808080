/**
 * docker/, checked without a Docker engine: the Dockerfile's stages, docker/compose.yaml against
 * the apps' env schemas, its wiring to the local fakes, and the fakes' image commands run here as
 * processes from the file layout the Dockerfile's `fakes` target produces (compiled by the
 * Dockerfile's own tsc line), on loopback, each called once through the client the apps use.
 * The apps' image commands are run by tools/dev/deploy.e2e-spec.ts (it needs `npm run build`).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { planPrices, StripeApi } from '@flagship/billing';
import { freePort, waitFor } from '@flagship/testing';
import { appContract, appNames, ROOT } from './app-contracts';
import { type ManifestSet, startupProblems, unknownVariables, type Workload } from './manifest-checks';

interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile: string; target?: string; args?: Record<string, string> };
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  depends_on?: Record<string, { condition: string }>;
  read_only?: boolean;
  cap_drop?: string[];
}

// merge: compose files share settings through YAML merge keys (<<), as Docker Compose reads them.
const compose = parse(readFileSync(join(ROOT, 'docker/compose.yaml'), 'utf8'), { merge: true }) as { services: Record<string, ComposeService> };
const services = compose.services;
const dockerfile = readFileSync(join(ROOT, 'docker/Dockerfile'), 'utf8');
const APPS = appNames();
const FAKES = ['fake-model', 'fake-stripe'];

/** compose's `${VAR:-default}` as it resolves when VAR is not set. */
const resolved = (env: Record<string, unknown> = {}): Record<string, string> =>
  Object.fromEntries(Object.entries(env).map(([k, v]) => [k, String(v).replace(/\$\{\w+:-([^}]*)\}/g, '$1')]));
const envOf = (service: string): Record<string, string> => resolved(services[service]?.environment);

/** One stage of the Dockerfile: its FROM line to the next FROM. */
function stage(name: string): { from: string; text: string } {
  const m = new RegExp(`^FROM (\\S+) AS ${name}$`, 'm').exec(dockerfile);
  if (!m) throw new Error(`docker/Dockerfile has no stage ${name}`);
  const rest = dockerfile.slice(m.index + m[0].length);
  const next = rest.search(/^FROM /m);
  return { from: m[1], text: next === -1 ? rest : rest.slice(0, next) };
}

describe('docker/Dockerfile', () => {
  it('builds in stages and runs the apps and the fakes as the non-root user, from a shared base', () => {
    expect(stage('build').from).toBe('deps');
    expect([stage('runtime').from, stage('fakes').from]).toEqual(['base', 'base']);
    expect(stage('base').text).toMatch(/^USER node$/m);
    expect(stage('runtime').text).toMatch(/^CMD \["node", "dist\/main.js"\]$/m);
    // The default target is the last stage: an app.
    expect(dockerfile.slice(dockerfile.lastIndexOf('\nFROM '))).toMatch(/^\nFROM base AS runtime$/m);
  });

  it('takes the Node major version as a build argument, an LTS line by default, and ships no devDependencies', () => {
    const major = /^ARG NODE_MAJOR=(\d+)$/m.exec(dockerfile);
    expect(major).not.toBeNull();
    // Even majors become LTS; 20 reached its end of life in April 2026.
    expect([Number(major![1]) % 2, Number(major![1]) > 20]).toEqual([0, true]);
    expect(dockerfile).toMatch(/^ARG NODE_IMAGE=node:\$\{NODE_MAJOR\}-/m);
    expect(stage('base').text).toMatch(/^COPY --from=prod-deps .*\/node_modules /m);
    for (const s of ['base', 'runtime', 'fakes']) expect([s, /--from=(deps|build|fakes-build) .*node_modules/.test(stage(s).text)]).toEqual([s, false]);
    expect(stage('prod-deps').text).toMatch(/npm ci --omit=dev/);
  });
});

describe('docker/compose.yaml', () => {
  it('brings up the whole stack: Postgres, Redis, the migration and the demo seed, every app and the fakes', () => {
    expect(Object.keys(services).sort()).toEqual(['postgres', 'redis', 'migrate', 'seed', ...APPS, ...FAKES].sort());
    expect(services['migrate'].command).toEqual(['node', 'dist/migrate.js']);
    expect(services['seed'].command).toEqual(['node', 'dist/seed.js']);
    expect(Object.keys(services['seed'].depends_on ?? {})).toContain('migrate');
    // The seed starts management-api's module tree: it gets the same environment.
    expect(envOf('seed')).toEqual(envOf('management-api'));
    for (const app of APPS) {
      const depends = Object.keys(services[app].depends_on ?? {});
      expect([app, depends.includes('migrate'), depends.includes('redis')]).toEqual([app, true, true]);
    }
  });

  it('builds each app, the migration and the seed through the one Dockerfile by APP, and the fakes by its `fakes` target', () => {
    for (const [name, svc] of Object.entries(services).filter(([, s]) => s.build)) {
      expect([name, svc.build!.dockerfile, svc.build!.context]).toEqual([name, 'docker/Dockerfile', '..']);
      const app = svc.build!.args?.['APP'];
      if (FAKES.includes(name)) {
        expect([name, svc.build!.target, app]).toEqual([name, 'fakes', undefined]);
      } else {
        expect([name, app]).toEqual([name, ['migrate', 'seed'].includes(name) ? 'management-api' : name]);
        expect(JSON.parse(readFileSync(join(ROOT, 'apps', app!, 'project.json'), 'utf8')).targets.build).toBeDefined();
      }
    }
    expect(new Set(Object.values(services).filter((s) => s.build?.target === 'fakes').map((s) => s.image)).size).toBe(1);
  });

  /** The image's first ENV line (the base stage): what every container starts with before compose adds its own. */
  const imageEnv = (): Record<string, string> => {
    const block = /^ENV ((?:.*\\\n)*.*)$/m.exec(stage('base').text)![1];
    return Object.fromEntries(block.split(/\\\n/).map((l) => l.trim().split('=') as [string, string]));
  };

  it('gives every app what its env schema requires, and nothing it does not read', () => {
    const set: ManifestSet = { name: 'docker/compose.yaml', objects: [] };
    const problems: string[] = [];
    for (const app of APPS) {
      const given = envOf(app);
      const contract = appContract(app);
      // Compose hands secrets over as plain variables, which the apps read through their SecretStore
      // (not their env schema): so any given variable may count as a secret the app's source names.
      const workload = (env: Record<string, string>, fromSecret = new Set<string>()): Workload => ({ deployment: {}, app, component: app, container: {}, env, fromSecret, optional: new Set(), problems: [] });
      // The image's ENV (one recipe for every app, so HOST and OREP_HOST both) plus compose's.
      problems.push(...startupProblems(set, workload({ ...imageEnv(), ...given }), contract).problems);
      problems.push(...unknownVariables(set, workload(given, new Set(Object.keys(given))), contract));
      expect([app, services[app].read_only, services[app].cap_drop]).toEqual([app, true, ['ALL']]);
    }
    expect(problems).toEqual([]);
  });

  it('is a development stack: the dev identity provider on, with one issuer and audience for management-api and ai-gateway', () => {
    const api = envOf('management-api');
    const gateway = envOf('ai-gateway');
    expect([api['NODE_ENV'], api['IDP_MODE']]).toEqual(['development', 'dev']);
    expect([gateway['OAUTH_ISSUER'], gateway['OAUTH_AUDIENCE']]).toEqual([api['OAUTH_ISSUER'], api['OAUTH_AUDIENCE']]);
  });

  it('points the apps at the fakes by service name and port, and the fake Stripe at billing-worker', () => {
    const model = envOf('fake-model');
    const stripe = envOf('fake-stripe');
    const gateway = envOf('ai-gateway');
    for (const provider of ['INHOUSE', 'HOSTED']) {
      expect(gateway[`PROVIDER_${provider}_URL`]).toBe(`http://fake-model:${model['FAKE_UPSTREAM_PORT']}/v1`);
      expect(gateway[`PROVIDER_${provider}_API_KEY`]).toBe(model['FAKE_UPSTREAM_API_KEY']);
    }
    for (const app of ['management-api', 'billing-worker']) {
      expect([app, envOf(app)['STRIPE_API_BASE']]).toEqual([app, `http://fake-stripe:${stripe['FAKE_STRIPE_PORT']}`]);
    }
    expect(stripe['FAKE_STRIPE_WEBHOOK_URL']).toBe(`http://billing-worker:${envOf('billing-worker')['PORT']}/webhooks/stripe`);
    // The browser opens Checkout and portal links on the host, through the published port.
    const publicUrl = new URL(stripe['FAKE_STRIPE_PUBLIC_URL']);
    expect(services['fake-stripe'].ports).toContain(`${publicUrl.port}:${stripe['FAKE_STRIPE_PORT']}`);
    // Inside the container network: bound to every interface, or the other containers cannot reach them.
    expect([model['FAKE_UPSTREAM_HOST'], stripe['FAKE_STRIPE_HOST']]).toEqual(['0.0.0.0', '0.0.0.0']);
    for (const fake of FAKES) expect([fake, services[fake].read_only, services[fake].cap_drop]).toEqual([fake, true, ['ALL']]);
    expect(Object.keys(services['ai-gateway'].depends_on ?? {})).toContain('fake-model');
    expect(Object.keys(services['billing-worker'].depends_on ?? {})).toContain('fake-stripe');
  });
});

describe('the fakes, as the image runs them', () => {
  let dir: string;
  const children: ChildProcess[] = [];

  beforeAll(() => {
    // The Dockerfile's own compile line, into a directory laid out as the image's /app.
    const run = /^RUN npx tsc -p (\S+) --outDir \/out$/m.exec(stage('fakes-build').text);
    expect(run).not.toBeNull();
    expect(stage('fakes').text).toMatch(/^COPY --from=fakes-build .*\/out \.\/dist$/m);
    dir = mkdtempSync(join(tmpdir(), 'image-fakes-'));
    const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(ROOT, run![1]), '--outDir', join(dir, 'dist')], { encoding: 'utf8' });
    expect([tsc.status, tsc.stdout + tsc.stderr]).toEqual([0, '']);
    // The image's node_modules is the production dependencies; the repository's holds them too.
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  }, 60000);

  afterAll(async () => {
    for (const c of children) {
      if (c.exitCode === null) {
        c.kill('SIGTERM');
        await once(c, 'exit');
      }
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Runs a fake service's compose command with its compose environment, bound to loopback on a free port. */
  async function start(service: string, loopback: Record<string, string>, ready: RegExp): Promise<{ line: RegExpExecArray; child: ChildProcess }> {
    const svc = services[service];
    expect(svc.command?.[0]).toBe('node');
    const child = spawn(process.execPath, svc.command!.slice(1), { cwd: dir, env: { PATH: process.env['PATH'], ...envOf(service), ...loopback }, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let out = '';
    child.stdout!.on('data', (c) => (out += c));
    child.stderr!.on('data', (c) => (out += c));
    const line = await waitFor(async () => ready.exec(out) ?? (child.exitCode !== null ? Promise.reject(new Error(`${service} exited: ${out}`)) : undefined), 15000);
    return { line, child };
  }

  it('the compiled fakes load only Node modules, their own files and production dependencies (the image has no others)', () => {
    const { dependencies } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    const files = readdirSync(join(dir, 'dist'), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.js'));
    expect(files.sort()).toEqual(expect.arrayContaining(['tools/dev/fake-stripe.js', 'tools/dev/fake-upstream.js']));
    const loaded = files.flatMap((f) => [...readFileSync(join(dir, 'dist', f), 'utf8').matchAll(/require\("([^"]+)"\)/g)].map((m) => m[1]));
    const outside = loaded.filter((m) => !m.startsWith('node:') && !m.startsWith('.') && !(m.split('/')[0] in dependencies));
    expect(outside).toEqual([]);
  });

  it('fake-model: serves the models to the key ai-gateway is given, as compose runs it', async () => {
    const port = await freePort();
    const { line, child } = await start('fake-model', { FAKE_UPSTREAM_HOST: '127.0.0.1', FAKE_UPSTREAM_PORT: String(port) }, /^fake model upstream listening on (\S+)$/m);
    expect(line[1]).toBe(`http://127.0.0.1:${port}/v1`);
    const gateway = envOf('ai-gateway');
    const models = await fetch(`${line[1]}/models`, { headers: { authorization: `Bearer ${gateway['PROVIDER_INHOUSE_API_KEY']}` } });
    expect([models.status, ((await models.json()) as { data: Array<{ id: string }> }).data.map((m) => m.id)]).toEqual([200, ['fake-chat-1', 'fake-embed-1']]);
    const refused = await fetch(`${line[1]}/models`, { headers: { authorization: 'Bearer another-key' } });
    expect(refused.status).toBe(401);
    child.kill('SIGTERM');
    expect(await once(child, 'exit')).toEqual([0, null]);
  });

  it('fake-stripe: reports exactly the STRIPE_* settings compose gives the apps, and the apps client finds the plan prices there', async () => {
    const port = await freePort();
    const { line, child } = await start('fake-stripe', { FAKE_STRIPE_HOST: '127.0.0.1', FAKE_STRIPE_PORT: String(port) }, /^fake stripe settings (.*)$/m);
    const settings = JSON.parse(line[1]) as Record<string, string>;
    for (const app of ['management-api', 'billing-worker']) {
      const env = envOf(app);
      const stripeEnv = Object.fromEntries(Object.entries(env).filter(([k]) => Object.keys(settings).includes(k)));
      expect([app, stripeEnv]).toEqual([app, settings]);
    }
    // The apps' own Stripe client, with billing-worker's settings, here through loopback instead of
    // the service name.
    const env = envOf('billing-worker');
    const secrets = { get: (name: string) => env[name] };
    const stripe = new StripeApi(secrets, { apiBase: `http://127.0.0.1:${port}`, maxNetworkRetries: 0 }).client();
    const prices = await Promise.all(planPrices(secrets).map(async ({ plan, priceId }) => [plan, (await stripe.prices.retrieve(priceId)).recurring?.interval]));
    expect(prices).toEqual([
      ['free', 'month'],
      ['standard', 'month'],
      ['premium', 'month'],
    ]);
    const session = await stripe.checkout.sessions.create({ mode: 'subscription', line_items: [{ price: env['STRIPE_PRICE_STANDARD'], quantity: 1 }], success_url: 'http://localhost:3000/console/' });
    expect(session.url).toBe(`${envOf('fake-stripe')['FAKE_STRIPE_PUBLIC_URL']}/checkout/${session.id}`);
    child.kill('SIGTERM');
    expect(await once(child, 'exit')).toEqual([0, null]);
  });
});
