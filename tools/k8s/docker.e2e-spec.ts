/**
 * docker/, checked without a Docker engine: the Dockerfile's stages, base image, user, the files it
 * copies and the commands it runs (its image layout script run here), docker/compose.yaml against
 * the apps' env schemas, its wiring to the local fakes, and the fakes' image commands run here as
 * processes from the file layout the Dockerfile's `fakes` target produces (compiled by the
 * Dockerfile's own tsc line), on loopback, each called once through the client the apps use.
 * The apps' image commands are run by tools/dev/deploy.e2e-spec.ts (it needs `npm run build`).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { planPrices, StripeApi } from '@flagship/billing';
import { freePort, waitFor } from '@flagship/testing';
import { appContract, appNames, ROOT } from './app-contracts';
import { renderChart } from './helm';
import { type ManifestSet, type Obj, securityProblems, startupProblems, unknownVariables, type Workload } from './manifest-checks';

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

/** Every stage in order: its name, what it is built FROM, and its instructions (continuation lines joined, comments dropped). */
const stages = [...dockerfile.matchAll(/^FROM (\S+) AS (\S+)$/gm)].map((m) => {
  const { text } = stage(m[2]);
  const instructions = text
    .replace(/\s*\\\n\s*/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  return { name: m[2], from: m[1], instructions };
});
const ofStage = (name: string) => stages.find((s) => s.name === name)!;
/** The build arguments' defaults (the ARG lines before the first FROM). */
const buildArgs = Object.fromEntries([...dockerfile.slice(0, dockerfile.search(/^FROM /m)).matchAll(/^ARG (\w+)=(\S+)$/gm)].map((m) => [m[1], m[2]]));
/** A COPY's flags, sources and destination. */
function parseCopy(line: string): { from?: string; sources: string[]; dest: string } {
  const words = line.split(/\s+/).slice(1);
  const flags = words.filter((w) => w.startsWith('--'));
  const paths = words.filter((w) => !w.startsWith('--'));
  return { from: flags.find((f) => f.startsWith('--from='))?.slice('--from='.length), sources: paths.slice(0, -1), dest: paths[paths.length - 1] };
}
const copies = (name: string) => ofStage(name).instructions.filter((i) => i.startsWith('COPY ')).map(parseCopy);
const runs = (name: string) => ofStage(name).instructions.filter((i) => i.startsWith('RUN '));
const RUNTIME_STAGES = ['base', 'runtime', 'fakes'];

describe('docker/Dockerfile', () => {
  it('builds in stages and runs the apps and the fakes as the non-root user, from a shared base', () => {
    expect(stage('build').from).toBe('deps');
    expect([stage('runtime').from, stage('fakes').from]).toEqual(['base', 'base']);
    expect(stage('runtime').text).toMatch(/^CMD \["node", "dist\/main.js"\]$/m);
    // The default target is the last stage: an app.
    expect(dockerfile.slice(dockerfile.lastIndexOf('\nFROM '))).toMatch(/^\nFROM base AS runtime$/m);
  });

  // The Node line itself (NODE_MAJOR against CI's Node and engines) is tools/dev/node-line.spec.ts's.
  it('builds every stage from Node on Debian 13 (trixie), slim, pinned by digest, and checks the image is on NODE_MAJOR', () => {
    const bases = stages.filter((s) => !stages.some((earlier) => earlier.name === s.from));
    expect(bases.map((s) => s.name)).toEqual(['deps', 'prod-deps', 'base']);
    for (const s of bases) {
      const image = s.from.replace(/^\$\{(\w+)\}$/, (_, arg: string) => buildArgs[arg] ?? `unset ${arg}`);
      expect([s.name, image]).toEqual([s.name, expect.stringMatching(new RegExp(`^node:${buildArgs['NODE_MAJOR']}-trixie-slim@sha256:[0-9a-f]{64}$`))]);
    }
    // A NODE_IMAGE given without its NODE_MAJOR (or the other way round) stops the build.
    expect(ofStage('deps').instructions).toEqual(expect.arrayContaining(['ARG NODE_MAJOR', expect.stringMatching(/^RUN node -e ".*process\.versions\.node.*process\.exit\(1\).*" "\$NODE_MAJOR"$/)]));
  });

  it('runs as a numeric, non-root user (uid:gid), the one the chart runs the pods as', () => {
    const users = stages.flatMap((s) => s.instructions.filter((i) => i.startsWith('USER ')).map((i) => [s.name, i]));
    // Set once, in the base every image starts from.
    expect(users).toEqual([['base', expect.stringMatching(/^USER \d+:\d+$/)]]);
    const [uid, gid] = users[0][1].slice('USER '.length).split(':').map(Number);
    expect([uid > 0, gid > 0]).toEqual([true, true]);
    // Kubernetes can check runAsNonRoot only against a numeric USER; the chart's pods (the apps, the
    // migration job, the helm test pods) ask for it, and where they name a user it is the image's.
    const pods: Array<[string, Obj]> = renderChart(join(ROOT, 'k8s/helm/flagship'))
      .documents.map((o): [string, Obj | undefined] => [`${o['kind']}/${o['metadata'].name}`, o['kind'] === 'Pod' ? o['spec'] : o['spec']?.template?.spec])
      .filter((e): e is [string, Obj] => e[1] !== undefined);
    expect(pods.length).toBeGreaterThan(4);
    for (const [where, spec] of pods) {
      expect([where, securityProblems(where, spec)]).toEqual([where, []]);
      const { runAsUser = uid, runAsGroup = gid } = spec['securityContext'] as { runAsUser?: number; runAsGroup?: number };
      expect([where, runAsUser, runAsGroup]).toEqual([where, uid, gid]);
    }
    // And without a runAsUser, as a cluster that assigns user ids (OpenShift) renders it.
    const unset = renderChart(join(ROOT, 'k8s/helm/flagship'), { values: { podSecurityContext: { runAsUser: null, runAsGroup: null, fsGroup: null } } }).documents;
    const deployment = unset.find((o) => o['kind'] === 'Deployment')!;
    expect(deployment['spec'].template.spec.securityContext).toEqual({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
  });

  it('copies only files of the build context (not ignored by .dockerignore) or of an earlier stage', () => {
    const ignored = readFileSync(join(ROOT, '.dockerignore'), 'utf8').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
    const problems: string[] = [];
    stages.forEach((s, index) => {
      for (const copy of copies(s.name)) {
        if (copy.from !== undefined) {
          if (!stages.slice(0, index).some((earlier) => earlier.name === copy.from)) problems.push(`${s.name}: COPY --from=${copy.from} is not an earlier stage`);
          continue;
        }
        for (const source of copy.sources) {
          if (!existsSync(join(ROOT, source))) problems.push(`${s.name}: ${source} is not in the repository`);
          if (ignored.includes(source.split('/')[0])) problems.push(`${s.name}: ${source} is excluded by .dockerignore`);
        }
      }
    });
    expect(problems).toEqual([]);
    // What `COPY . .` must not bring: the machine's dependencies and build output.
    expect(ignored).toEqual(expect.arrayContaining(['node_modules', 'dist', 'tmp', '.git']));
  });

  it('ships no sources and no devDependencies: the runtime stages copy only the production dependencies and the compiled output', () => {
    const allowed = ['prod-deps /repo/node_modules ./node_modules', 'prod-deps /repo/package.json ./package.json', 'build /out ./dist', 'fakes-build /out ./dist'];
    for (const s of RUNTIME_STAGES) {
      const copied = copies(s).map((copy) => `${copy.from ?? '(build context)'} ${copy.sources.join(' ')} ${copy.dest}`);
      expect([s, copied.filter((c) => !allowed.includes(c))]).toEqual([s, []]);
      // No npm or npx run there (the base stage deletes them).
      expect([s, runs(s).filter((r) => /(?<![\w/.-])npx? (?!\/)/.test(r))]).toEqual([s, []]);
    }
    expect(runs('prod-deps')).toEqual(expect.arrayContaining([expect.stringMatching(/ npm ci --omit=dev /)]));
  });

  it('installs from the lockfile only: npm ci, after copying package-lock.json', () => {
    for (const s of stages) {
      const npm = runs(s.name).filter((r) => /\bnpm (ci|install|i|update|add)\b/.test(r));
      for (const r of npm) expect([s.name, r]).toEqual([s.name, expect.stringMatching(/\bnpm ci\b/)]);
      if (npm.length > 0) expect([s.name, copies(s.name).some((c) => c.from === undefined && c.sources.includes('package-lock.json'))]).toEqual([s.name, true]);
    }
    expect(stages.filter((s) => runs(s.name).some((r) => /\bnpm ci\b/.test(r))).map((s) => s.name)).toEqual(['deps', 'prod-deps']);
  });

  it("the build stage builds the app into dist/apps/<app>, and its layout script writes the entry files the CMD and compose's commands name", () => {
    // The build: the app's own nx target (and the console's for management-api), whose output is dist/apps/<name>.
    expect(runs('build')).toEqual([
      expect.stringMatching(/^RUN test -n "\$APP"/),
      'RUN NX_DAEMON=false npx nx run "$APP":build --output-style=static && if [ "$APP" = management-api ]; then NX_DAEMON=false npx nx run console:build --output-style=static; fi',
      'RUN sh docker/image-layout.sh "$APP" dist /out',
    ]);
    for (const app of APPS) {
      const build = JSON.parse(readFileSync(join(ROOT, 'apps', app, 'project.json'), 'utf8')).targets.build.options.command as string;
      expect([app, build]).toEqual([app, expect.stringContaining(`--outDir dist/apps/${app}`)]);
      expect([app, JSON.parse(readFileSync(join(ROOT, 'apps', app, 'tsconfig.app.json'), 'utf8')).compilerOptions.outDir]).toEqual([app, `../../dist/apps/${app}`]);
    }
    expect(readFileSync(join(ROOT, 'apps/console/vite.config.mts'), 'utf8')).toMatch(/outDir: fileURLToPath\(new URL\('\.\.\/\.\.\/dist\/apps\/console'/);
    expect(copies('runtime')).toEqual([{ from: 'build', sources: ['/out'], dest: './dist' }]);
    const cmd = JSON.parse(/^CMD (\[.*\])$/m.exec(stage('runtime').text)![1]) as string[];
    expect(cmd).toEqual(['node', 'dist/main.js']);

    // The layout script, run on a dist/ shaped as the builds leave it (tsc keeps the repository's
    // paths under dist/apps/<app>): each entry file it writes must start the app's own compiled file,
    // as `node <entry>` from /app. tools/dev/deploy.e2e-spec.ts runs it on the real build.
    const dir = mkdtempSync(join(tmpdir(), 'image-layout-'));
    try {
      const compiledEntries = (app: string) => ['main', 'migrate', 'seed'].filter((f) => existsSync(join(ROOT, 'apps', app, 'src', `${f}.ts`)));
      for (const app of APPS) {
        for (const f of compiledEntries(app)) {
          mkdirSync(join(dir, 'dist/apps', app, 'apps', app, 'src'), { recursive: true });
          writeFileSync(join(dir, 'dist/apps', app, 'apps', app, 'src', `${f}.js`), `console.log('${app} ${f}');\n`);
        }
      }
      mkdirSync(join(dir, 'dist/apps/console'), { recursive: true });
      writeFileSync(join(dir, 'dist/apps/console/index.html'), '<!doctype html>');
      for (const app of APPS) {
        const app_ = join(dir, 'image', app);
        const layout = spawnSync('sh', [join(ROOT, 'docker/image-layout.sh'), app, join(dir, 'dist'), join(app_, 'dist')], { encoding: 'utf8' });
        expect([app, layout.status, layout.stderr]).toEqual([app, 0, '']);
        const commands = [cmd, ...Object.values(services).filter((svc) => svc.build?.args?.['APP'] === app && svc.command).map((svc) => svc.command!)];
        for (const command of commands) {
          const started = spawnSync(process.execPath, command.slice(1), { cwd: app_, encoding: 'utf8' });
          const entry = command[1].replace(/^dist\/|\.js$/g, '');
          expect([app, command, started.status, started.stdout]).toEqual([app, command, 0, `${app} ${entry}\n`]);
        }
        // management-api serves the console from CONSOLE_DIR's default, relative to /app.
        expect([app, existsSync(join(app_, String(appContract(app).specs['CONSOLE_DIR']?.default ?? 'none'), 'index.html'))]).toEqual([app, app === 'management-api']);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
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

  it("publishes every port on the host's 127.0.0.1 only (the dev identity provider signs ID tokens for any e-mail)", () => {
    const published = Object.entries(services).flatMap(([name, svc]) => (svc.ports ?? []).map((p) => [name, p] as const));
    expect(published.length).toBeGreaterThan(0);
    for (const [name, port] of published) expect([name, port]).toEqual([name, expect.stringMatching(/^127\.0\.0\.1:\d+:\d+$/)]);
    // Inside its container management-api listens on every interface (the image's HOST), which it
    // refuses with the dev identity provider unless told that only this machine reaches the port.
    expect(imageEnv()['HOST']).toBe('0.0.0.0');
    expect(envOf('management-api')['IDP_DEV_ALLOW_NON_LOOPBACK_HOST']).toBe('true');
    expect(envOf('management-api')['IDP_DEV_ALLOW_PUBLIC']).toBeUndefined();
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
    expect(services['fake-stripe'].ports).toContain(`127.0.0.1:${publicUrl.port}:${stripe['FAKE_STRIPE_PORT']}`);
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
  async function start(service: string, loopback: Record<string, string>, ready: RegExp): Promise<{ line: RegExpExecArray; child: ChildProcess; output: () => string }> {
    const svc = services[service];
    expect(svc.command?.[0]).toBe('node');
    const child = spawn(process.execPath, svc.command!.slice(1), { cwd: dir, env: { PATH: process.env['PATH'], ...envOf(service), ...loopback }, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let out = '';
    child.stdout!.on('data', (c) => (out += c));
    child.stderr!.on('data', (c) => (out += c));
    const line = await waitFor(async () => ready.exec(out) ?? (child.exitCode !== null ? Promise.reject(new Error(`${service} exited: ${out}`)) : undefined), 15000);
    return { line, child, output: () => out };
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

  it('fake-stripe: reports exactly the STRIPE_* settings compose gives the apps, never its keys, and the apps client finds the plan prices there', async () => {
    const port = await freePort();
    const { line, child, output } = await start('fake-stripe', { FAKE_STRIPE_HOST: '127.0.0.1', FAKE_STRIPE_PORT: String(port) }, /^fake stripe settings (.*)$/m);
    const settings = JSON.parse(line[1]) as Record<string, string>;
    expect(Object.keys(settings).sort()).toEqual(['STRIPE_API_BASE', 'STRIPE_PRICE_FREE', 'STRIPE_PRICE_PREMIUM', 'STRIPE_PRICE_STANDARD']);
    const fakeEnv = envOf('fake-stripe');
    for (const key of [fakeEnv['FAKE_STRIPE_API_KEY'], fakeEnv['FAKE_STRIPE_WEBHOOK_SECRET']]) expect(output()).not.toContain(key);
    for (const app of ['management-api', 'billing-worker']) {
      const env = envOf(app);
      const stripeEnv = Object.fromEntries(Object.entries(env).filter(([k]) => Object.keys(settings).includes(k)));
      expect([app, stripeEnv]).toEqual([app, settings]);
      // The keys the apps are given are the ones the fake was started with, not read from its output.
      expect([app, env['STRIPE_SECRET_KEY'], env['STRIPE_WEBHOOK_SECRET']]).toEqual([app, fakeEnv['FAKE_STRIPE_API_KEY'], fakeEnv['FAKE_STRIPE_WEBHOOK_SECRET']]);
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
