/**
 * The images and the quickstart, checked without a Docker engine: compose names only buildable
 * apps, and each image's command is run here from the same file layout the Dockerfile produces
 * (the built dist/ copied to dist/, node_modules beside it), as a process, against real Postgres
 * and Redis. Needs `npm run build` first (npm test does it).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { parse } from 'yaml';
import { createTestEnvironment, freePort, http, waitFor, type TestEnvironment } from '@flagship/testing';

const root = join(__dirname, '..', '..');
const APPS = ['management-api', 'ai-gateway', 'billing-worker', 'orep-server'];

interface ComposeService {
  build?: { context: string; dockerfile: string; args?: Record<string, string> };
  command?: string[];
}

const compose = parse(readFileSync(join(root, 'docker/compose.yaml'), 'utf8')) as { services: Record<string, ComposeService> };
const dockerfile = readFileSync(join(root, 'docker/Dockerfile'), 'utf8');

/** Lays out one image's /app as the Dockerfile's runtime stage does. */
function imageLayout(app: string): string {
  const dir = mkdtempSync(join(tmpdir(), `image-${app}-`));
  cpSync(join(root, 'dist/apps', app), join(dir, 'dist'), { recursive: true });
  writeFileSync(join(dir, 'dist/main.js'), `require('./apps/${app}/src/main.js');\n`);
  if (existsSync(join(dir, `dist/apps/${app}/src/migrate.js`))) {
    writeFileSync(join(dir, 'dist/migrate.js'), `require('./apps/${app}/src/migrate.js');\n`);
  }
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
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
    const built = Object.entries(compose.services).filter(([, s]) => s.build);
    expect(built.map(([, s]) => s.build!.args!['APP']).sort()).toEqual([...APPS, 'management-api'].sort());
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

  it('runs as a non-root user from a multi-stage build', () => {
    expect(dockerfile).toMatch(/^FROM .* AS deps$/m);
    expect(dockerfile).toMatch(/^FROM deps AS build$/m);
    expect(dockerfile).toMatch(/^FROM .* AS runtime$/m);
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/^CMD \["node", "dist\/main.js"\]$/m);
  });
});

describe('each image command, run as a process', () => {
  let te: TestEnvironment;
  const layouts: string[] = [];

  beforeAll(async () => {
    te = await createTestEnvironment();
  });

  afterAll(async () => {
    for (const d of layouts) rmSync(d, { recursive: true, force: true });
    await te?.teardown();
  });

  it.each(APPS)('%s starts, answers /healthz and /readyz, and exits 0 on SIGTERM', async (app) => {
    const dir = imageLayout(app);
    layouts.push(dir);
    const port = await freePort();
    const { child, output } = run(dir, ['dist/main.js'], {
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

  it('the migration command applies nothing twice', async () => {
    const dir = imageLayout('management-api');
    layouts.push(dir);
    const { child, output } = run(dir, ['dist/migrate.js'], te.env);
    const [code] = await once(child, 'exit');
    expect(code).toBe(0);
    expect(output()).toContain('schema up to date');
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
