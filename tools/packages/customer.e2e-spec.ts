/**
 * The packages as a customer gets them: packed from dist/packages (`npm run build` builds them, as
 * `nx run sdk:package`), installed with plain `npm install` into a scratch directory under the OS's
 * temporary directory (no path mapping, no workspace hoisting), and used against the BUILT
 * management-api from a CommonJS script, an ES module script and TypeScript, each run as a customer
 * runs it (`node`, `tsc`), never through jest's module system.
 *
 * The third-party packages they need (`@openfeature/server-sdk` and its `@openfeature/core`, `re2js`,
 * and `@types/node` for the TypeScript check) are packed from this repository's node_modules, the
 * versions package-lock.json pins, and installed from those tarballs with `--offline`: the test needs
 * no registry, so it is as fast and as repeatable as the rest of CI, and npm still resolves every
 * declared range (the provider's `re2js`, its peer) exactly as it would from a registry.
 */
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type BuiltProcess, createTestEnvironment, freePort, http, startBuiltProcess, type TestEnvironment } from '@flagship/testing';

const run = promisify(execFile);
const ROOT = join(__dirname, '../..');
const MAIN_JS = join(ROOT, 'dist/apps/management-api/apps/management-api/src/main.js');
const BUILT = ['sdk', 'openfeature-provider'].map((dir) => join(ROOT, 'dist/packages', dir));
const THIRD_PARTY = ['@openfeature/server-sdk', '@openfeature/core', 're2js', '@types/node', 'undici-types'].map((name) => join(ROOT, 'node_modules', name));
/** The environment without what `npm run` exports (npm_config_*): npm in the scratch directory reads only its own defaults, as a customer's does. */
const CUSTOMER_ENV = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name)));

interface CustomerResult {
  resolved: string[];
  created: { key: string; enabled: boolean; values: unknown[] };
  read: { key: string; etag: string };
  updated: string[];
  missing: string;
  norway: { value: boolean; reason: string; variant?: string; flagMetadata: Record<string, unknown> };
  us: { value: boolean; reason: string };
  unknown: { value: boolean; reason: string; errorCode?: string };
}

describe('the packages, installed with npm outside the workspace, as a customer uses them', () => {
  let scratch: string;
  let te: TestEnvironment;
  let api: BuiltProcess;
  let credentials: { clientId: string; clientSecret: string };
  let installMs: number;

  /** Packs the built packages and their third-party dependencies into the scratch directory, and installs them there. */
  async function install(): Promise<void> {
    const started = Date.now();
    writeFileSync(join(scratch, 'package.json'), `${JSON.stringify({ name: 'customer-app', version: '1.0.0', private: true })}\n`);
    await run('npm', ['pack', '--silent', '--ignore-scripts', '--pack-destination', scratch, ...BUILT, ...THIRD_PARTY], { cwd: scratch, env: CUSTOMER_ENV });
    const tarballs = readdirSync(scratch).filter((f) => f.endsWith('.tgz')).sort();
    expect(tarballs.filter((t) => t.startsWith('flagship-')).map((t) => t.replace(/-\d+\.\d+\.\d+\.tgz$/, ''))).toEqual(['flagship-openfeature-provider', 'flagship-sdk']);
    await run('npm', ['install', '--offline', '--no-audit', '--no-fund', '--loglevel=error', ...tarballs.map((t) => `./${t}`)], { cwd: scratch, env: CUSTOMER_ENV });
    cpSync(join(__dirname, 'customer'), scratch, { recursive: true });
    installMs = Date.now() - started;
  }

  /** The API on a database of its own, a signed-up user, and an OAuth client of their tenant that may read and write flags. */
  async function startApi(): Promise<void> {
    te = await createTestEnvironment({ IDP_MODE: 'dev', RATE_LIMIT_IP_PER_MINUTE: '100000' });
    const port = await freePort();
    api = await startBuiltProcess(MAIN_JS, { ...te.env, HOST: '127.0.0.1', PUBLIC_BASE_URL: `http://127.0.0.1:${port}` }, port);
    const email = `customer-${Date.now()}@flagship.test`;
    const account = await http(`${api.url}/dev/idp/accounts`, { method: 'POST', json: { email, password: 'correct-horse-1' } });
    if (account.status !== 201) throw new Error(`dev idp: ${account.status} ${account.text}`);
    const idToken: string = account.body.idToken;
    const signup = await http(`${api.url}/api/v1/auth/signup`, { method: 'POST', json: { idToken, email, password: 'correct-horse-1' } });
    if (signup.status !== 201) throw new Error(`signup: ${signup.status} ${signup.text}`);
    const client = await http(`${api.url}/api/oauth/clients`, {
      method: 'POST',
      headers: { authorization: `Bearer ${idToken}`, 'x-tenant-id': signup.body.data.canonical_tenant_id },
      json: { name: 'customer backend', scopes: ['flags:read', 'flags:write'] },
    });
    if (client.status !== 201) throw new Error(`oauth client: ${client.status} ${client.text}`);
    credentials = { clientId: client.body.clientId, clientSecret: client.body.clientSecret };
  }

  beforeAll(async () => {
    for (const needed of [MAIN_JS, ...BUILT.map((dir) => join(dir, 'package.json'))]) {
      if (!existsSync(needed)) throw new Error(`${needed} is missing: run npm run build (or npx nx run sdk:package and npx nx run management-api:build) first`);
    }
    scratch = mkdtempSync(join(tmpdir(), 'flagship-customer-'));
    await Promise.all([install(), startApi()]);
  }, 90_000);

  afterAll(async () => {
    api?.child.kill('SIGTERM');
    await te?.teardown();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  /** Runs a customer script with plain node in the scratch directory and parses what it printed. */
  async function customer(script: string, flagKey: string): Promise<CustomerResult> {
    const env = { PATH: process.env['PATH'], FLAGSHIP_URL: api.url, FLAGSHIP_CLIENT_ID: credentials.clientId, FLAGSHIP_CLIENT_SECRET: credentials.clientSecret, FLAG_KEY: flagKey };
    const { stdout } = await run(process.execPath, [script], { cwd: scratch, env, timeout: 30_000 });
    return JSON.parse(stdout) as CustomerResult;
  }

  function expectCustomerFlow(result: CustomerResult, flagKey: string, extension: string): void {
    // Each module system got its own build of each package, out of the scratch directory's node_modules.
    expect(result.resolved).toEqual([
      expect.stringMatching(new RegExp(`${scratch.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/node_modules/@flagship/sdk/dist/index\\.${extension}$`)),
      expect.stringMatching(new RegExp(`/node_modules/@flagship/openfeature-provider/dist/index\\.${extension}$`)),
    ]);
    expect(result.created).toEqual({ key: flagKey, enabled: true, values: [true, false] });
    expect(result.read).toEqual({ key: flagKey, etag: 'string' });
    expect(result.updated).toEqual(['nordics']);
    expect(result.missing).toBe(`FlagNotFoundError ${flagKey}-missing`);
    expect(result.norway).toMatchObject({ value: true, reason: 'TARGETING_MATCH', flagMetadata: { ruleId: 'nordics', ruleIndex: 0 } });
    expect(result.us).toMatchObject({ value: false, reason: 'DEFAULT' });
    expect(result.unknown).toMatchObject({ value: true, reason: 'ERROR', errorCode: 'FLAG_NOT_FOUND' });
  }

  it('installs both tarballs with plain npm, the provider bringing re2js and finding its peer', () => {
    for (const name of ['@flagship/sdk', '@flagship/openfeature-provider', 're2js', '@openfeature/server-sdk']) expect(existsSync(join(scratch, 'node_modules', name, 'package.json'))).toBe(true);
    // Nothing of the monorepo came along: no @flagship/* package but the two.
    expect(readdirSync(join(scratch, 'node_modules/@flagship')).sort()).toEqual(['openfeature-provider', 'sdk']);
    process.stdout.write(`customer install: ${installMs} ms\n`);
  });

  it('from CommonJS (require): signs in with client credentials, creates, reads and updates a flag, and evaluates it through OpenFeature', async () => {
    expectCustomerFlow(await customer('customer.cjs', 'cjs-checkout'), 'cjs-checkout', 'cjs');
  });

  it('from an ES module (import): the same', async () => {
    expectCustomerFlow(await customer('customer.mjs', 'esm-checkout'), 'esm-checkout', 'mjs');
  });

  // tsc checks every declaration file it loads (skipLibCheck off: the bundled ones are what is under test), @types/node's
  // among them: 9 s of CPU, near 30 s of wall time on two busy cores, hence a timeout of its own. TypeScript's own lib
  // files are left unchecked (skipDefaultLibCheck), which halves that and tests nothing of ours.
  it('type-checks TypeScript against the bundled declarations, ES module and CommonJS, refusing a wrong scope', async () => {
    await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], { cwd: scratch, env: CUSTOMER_ENV }).catch((err: { stdout?: string; message: string }) => {
      throw new Error(`tsc in the customer's directory failed: ${err.stdout || err.message}`);
    });
  }, 120_000);
});
