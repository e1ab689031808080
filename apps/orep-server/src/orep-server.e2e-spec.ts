/**
 * The built orep-server started as a process, as `npm start` and the Docker image start it, driven
 * by OpenFeature's server SDK through the npm OFREP provider. Needs the build first:
 * `npx nx run orep-server:build` (npm test builds everything before running jest).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client as PgClient } from 'pg';
import { OFREPProvider } from '@openfeature/ofrep-provider';
import { ErrorCode, OpenFeature } from '@openfeature/server-sdk';
import type { FlagDefinition } from '@flagship/flag-evaluation';
import { CHANNELS, createRedis, RedisKeys } from '@flagship/redis';
import { createTestEnvironment, FakeSecretsManager, freePort, http, waitFor, type TestEnvironment } from '@flagship/testing';

const root = join(__dirname, '..', '..', '..');
const main = join(root, 'dist/apps/orep-server/apps/orep-server/src/main.js');
const TOKEN = 'e2e-orep-token';

interface Started {
  url: string;
  /** The internal port: /metrics and the detailed /readyz. */
  metricsUrl: string;
  child: ChildProcess;
  output: () => string;
  stop: () => Promise<number | null>;
}

async function startBuilt(env: NodeJS.ProcessEnv): Promise<Started> {
  if (!existsSync(main)) throw new Error(`${main} is missing: run \`npx nx run orep-server:build\` first`);
  const port = await freePort();
  const metricsPort = await freePort();
  const child = spawn(process.execPath, [main], {
    env: { ...process.env, NODE_ENV: 'test', LOG_LEVEL: 'info', OREP_AUTH_TOKEN: TOKEN, ...env, OREP_PORT: String(port), METRICS_PORT: String(metricsPort) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (c) => (out += c));
  child.stderr!.on('data', (c) => (out += c));
  const url = `http://127.0.0.1:${port}`;
  await waitFor(async () => {
    if (child.exitCode !== null) throw new Error(`exited ${child.exitCode}: ${out}`);
    return (await http(`${url}/readyz`)).status === 200;
  }, 30000, 100);
  return {
    url,
    metricsUrl: `http://127.0.0.1:${metricsPort}`,
    child,
    output: () => out,
    stop: async () => {
      if (child.exitCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      const [code] = await once(child, 'exit');
      return code as number | null;
    },
  };
}

/** The JSON log lines (pino) the process wrote. */
const logLines = (out: string): Array<{ level: number; msg?: string; context?: string }> =>
  out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: number; msg?: string });

const flag = (key: string, value: string): FlagDefinition => ({
  key,
  type: 'string',
  defaultValue: value,
  variations: [{ id: 'only', name: 'Only', value, weight: 0 }],
  enabled: true,
  targets: [],
  rules: [],
  prerequisites: [],
});

afterAll(async () => {
  await OpenFeature.close();
});

describe('orep-server built, file mode', () => {
  let dir: string;
  let file: string;
  let app: Started;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'orep-e2e-'));
    file = join(dir, 'flags.json');
    writeFileSync(file, JSON.stringify({ version: 1, flags: [flag('greeting', 'hello')] }));
    // No database or Redis at all: unreachable addresses prove neither is used.
    app = await startBuilt({ OREP_FLAGS_FILE: file, DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none', REDIS_URL: 'redis://127.0.0.1:1' });
    await OpenFeature.setProviderAndWait('file', new OFREPProvider({ baseUrl: app.url, headers: [['Authorization', `Bearer ${TOKEN}`]] }));
  });

  afterAll(async () => {
    await app?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves the file to the OpenFeature SDK', async () => {
    const client = OpenFeature.getClient('file');
    expect(await client.getStringDetails('greeting', 'x', { targetingKey: 'u1' })).toMatchObject({ value: 'hello', reason: 'DEFAULT' });
    expect(await client.getStringDetails('missing', 'x', { targetingKey: 'u1' })).toMatchObject({ value: 'x', errorCode: ErrorCode.FLAG_NOT_FOUND });
  });

  it('reloads an edited file, logs and ignores a bad one, and exits 0 on SIGTERM', async () => {
    const client = OpenFeature.getClient('file');
    const tmp = join(dir, 'flags.json.new');
    writeFileSync(tmp, JSON.stringify({ version: 1, flags: [flag('greeting', 'bonjour')] }));
    renameSync(tmp, file);
    await waitFor(async () => (await client.getStringValue('greeting', 'x', { targetingKey: 'u1' })) === 'bonjour', 5000, 20);

    writeFileSync(file, '{ "version": 1, "flags": [');
    const refused = await waitFor(async () => logLines(app.output()).find((l) => l.level === 50 && /flag file .* refused/.test(l.msg ?? '')), 5000, 20);
    expect(refused.msg).toContain('not valid JSON');
    expect(refused.msg).toContain('still serving the 1 flags');
    expect(await client.getStringValue('greeting', 'x', { targetingKey: 'u1' })).toBe('bonjour');

    expect(await app.stop()).toBe(0);
  });
});

describe('orep-server built, refusing to start', () => {
  it.each([
    ['a flag file that does not validate', { OREP_FLAGS_FILE: 'BAD_FILE' }, /^invalid configuration: OREP_FLAGS_FILE .* flags\[0\]\.type: must be one of/],
    ['a flag file that is missing', { OREP_FLAGS_FILE: '/nonexistent/flags.json' }, /^invalid configuration: OREP_FLAGS_FILE .* cannot be read/],
    ['example flags in production', { NODE_ENV: 'production' }, /^invalid configuration: OREP_TENANT_ID or OREP_FLAGS_FILE is required/],
    // Else the SSE URL handed to browsers would name whatever Host header a request carried.
    ['push in production without OREP_PUBLIC_URL', { NODE_ENV: 'production', OREP_FLAGS_FILE: 'GOOD_FILE' }, /^invalid configuration: OREP_PUBLIC_URL is required when NODE_ENV=production and push is on/],
    ['a client-side key list that cannot be used', { OREP_FLAGS_FILE: 'GOOD_FILE', OREP_CLIENT_KEYS: 'pk_short' }, /^invalid configuration: OREP_CLIENT_KEYS is invalid \(key 1 must be/],
    ['the server token among the client-side keys', { OREP_FLAGS_FILE: 'GOOD_FILE', OREP_CLIENT_KEYS: TOKEN.padEnd(16, '0'), OREP_AUTH_TOKEN: TOKEN.padEnd(16, '0') }, /^invalid configuration: OREP_CLIENT_KEYS: a key equals OREP_AUTH_TOKEN/],
  ])('on %s, with one line on stderr and exit code 1', async (_name, extra, expected) => {
    const dir = mkdtempSync(join(tmpdir(), 'orep-e2e-bad-'));
    try {
      const bad = join(dir, 'flags.json');
      writeFileSync(bad, JSON.stringify({ version: 1, flags: [{ ...flag('x', 'y'), type: 'text' }] }));
      const good = join(dir, 'good.json');
      writeFileSync(good, JSON.stringify({ version: 1, flags: [flag('x', 'y')] }));
      const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'silent', OREP_AUTH_TOKEN: TOKEN, OREP_PORT: String(await freePort()), ...extra };
      if (env['OREP_FLAGS_FILE'] === 'BAD_FILE') env['OREP_FLAGS_FILE'] = bad;
      if (env['OREP_FLAGS_FILE'] === 'GOOD_FILE') env['OREP_FLAGS_FILE'] = good;
      delete env['OREP_TENANT_ID'];
      const child = spawn(process.execPath, [main], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr!.on('data', (c) => (stderr += c));
      const [code] = await once(child, 'exit');
      expect(code).toBe(1);
      const lines = stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(expected);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('orep-server built, in production with push on', () => {
  let dir: string;
  let app: Started;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'orep-e2e-public-'));
    const file = join(dir, 'flags.json');
    writeFileSync(file, JSON.stringify({ version: 1, flags: [flag('greeting', 'hello')] }));
    app = await startBuilt({ NODE_ENV: 'production', OREP_FLAGS_FILE: file, OREP_PUBLIC_URL: 'https://app.example.com/flags' });
  });

  afterAll(async () => {
    await app?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the SSE URL names OREP_PUBLIC_URL, whatever Host (and X-Forwarded-Proto) a request forges', async () => {
    // fetch cannot set Host: node:http can.
    const streamUrlFor = (headers: Record<string, string>) =>
      new Promise<string>((resolve, reject) => {
        const req = request(`${app.url}/ofrep/v1/evaluate/flags`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', ...headers } }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => resolve((JSON.parse(text) as { eventStreams: Array<{ url: string }> }).eventStreams[0]!.url));
        });
        req.on('error', reject);
        req.end(JSON.stringify({ context: { targetingKey: 'u1' } }));
      });
    for (const headers of [{ host: 'evil.example.net' }, { host: 'evil.example.net:8443', 'x-forwarded-proto': 'http', 'x-forwarded-host': 'evil.example.net' }, {}] as Array<Record<string, string>>) {
      expect(await streamUrlFor(headers)).toMatch(/^https:\/\/app\.example\.com\/flags\/ofrep\/v1\/events\?token=\d+\.[\w-]{43}$/);
    }
  });
});

describe('orep-server built, client-side keys from Secrets Manager', () => {
  const OLD = 'pk_e2e_rotation_key_0001';
  const NEW = 'pk_e2e_rotation_key_0002';
  let dir: string;
  let sm: FakeSecretsManager;
  let app: Started;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'orep-e2e-keys-'));
    const file = join(dir, 'flags.json');
    writeFileSync(file, JSON.stringify({ version: 1, flags: [{ ...flag('banner', 'on'), clientSideAvailability: { usingEnvironmentId: true, usingMobileKey: false } }, flag('pricing', 'secret')] }));
    sm = await FakeSecretsManager.start();
    sm.put('flagship/orep-e2e', { OREP_CLIENT_KEYS: OLD });
    app = await startBuilt({
      OREP_FLAGS_FILE: file,
      SECRETS_MANAGER_SECRET_ID: 'flagship/orep-e2e',
      SECRETS_REFRESH_S: '1',
      AWS_ENDPOINT_URL: sm.url,
      AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
      AWS_SECRET_ACCESS_KEY: 'example',
    });
  });

  afterAll(async () => {
    await app?.stop();
    await sm?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const bulk = (key: string) => http(`${app.url}/ofrep/v1/evaluate/flags`, { method: 'POST', json: { context: { targetingKey: 'u1' } }, headers: { authorization: `Bearer ${key}` } });

  it('reads the browser keys from the secret, and a rotation there applies without a restart', async () => {
    const before = await bulk(OLD);
    expect([before.status, (before.body as { flags: Array<{ key: string }> }).flags.map((f) => f.key)]).toEqual([200, ['banner']]);
    expect((await bulk(NEW)).status).toBe(401);
    sm.put('flagship/orep-e2e', { OREP_CLIENT_KEYS: NEW });
    await waitFor(async () => (await bulk(NEW)).status === 200, 10000, 100);
    expect((await bulk(OLD)).status).toBe(401);
    expect(app.child.exitCode).toBeNull();
    // Counted in the log, never shown.
    expect(app.output()).toContain('client-side keys in force: 1 browser, 0 mobile');
    expect(app.output()).not.toContain(NEW);
  });
});

describe('orep-server built, Postgres mode', () => {
  const TENANT = '0d7e4f3a-9c1b-4b6e-8f2d-5a6c7b8d9e01';
  let te: TestEnvironment;
  let db: PgClient;
  let app: Started;

  beforeAll(async () => {
    te = await createTestEnvironment();
    db = new PgClient({ connectionString: te.db.url });
    await db.connect();
    await db.query(`INSERT INTO tenants (id, name, primary_email) VALUES ($1, 'E2E', 'e2e@example.com')`, [TENANT]);
    await db.query(`INSERT INTO environments (tenant_id, key, name) VALUES ($1, 'production', 'Production')`, [TENANT]);
    await db.query(
      `WITH f AS (INSERT INTO flags (tenant_id, key, name, type, default_value, variations)
                  VALUES ($1, 'checkout', 'Checkout', 'boolean', 'false',
                          '[{"id":"on","name":"On","value":true,"weight":0},{"id":"off","name":"Off","value":false,"weight":0}]')
                  RETURNING id)
       INSERT INTO flag_environments (tenant_id, flag_id, environment_key, enabled, rules)
       SELECT $1, id, 'production', true, '[]' FROM f`,
      [TENANT],
    );
    app = await startBuilt({ ...te.env, LOG_LEVEL: 'info', OREP_TENANT_ID: TENANT });
    await OpenFeature.setProviderAndWait('pg', new OFREPProvider({ baseUrl: app.url, headers: [['X-API-Key', TOKEN]] }));
  });

  afterAll(async () => {
    await app?.stop();
    await db?.end();
    await te?.teardown();
  });

  it('serves the tenant from Postgres and applies a published change', async () => {
    const client = OpenFeature.getClient('pg');
    expect(await client.getBooleanDetails('checkout', true, { targetingKey: 'u1', country: 'FR' })).toMatchObject({ value: false, reason: 'DEFAULT' });

    await db.query(
      `UPDATE flag_environments SET rules = '[{"id":"fr","clauses":[{"attribute":"country","op":"in","values":["FR"]}],"variationId":"on"}]',
              version = version + 1, updated_at = now()
        WHERE tenant_id = $1`,
      [TENANT],
    );
    const publisher = createRedis({ url: te.env['REDIS_URL']!, name: 'e2e-publisher' });
    try {
      await waitFor(async () => publisher.status === 'ready', 5000, 10);
      await publisher.publish(
        new RedisKeys(te.redis.prefix).channel(CHANNELS.flagChanged.name),
        JSON.stringify({ tenantId: TENANT, environment: 'production', flagKey: 'checkout', version: 2 }),
      );
    } finally {
      publisher.disconnect();
    }
    await waitFor(async () => (await client.getBooleanValue('checkout', false, { targetingKey: 'u1', country: 'FR' })) === true, 5000, 20);
    expect(await client.getBooleanDetails('checkout', true, { targetingKey: 'u1', country: 'FR' })).toMatchObject({
      value: true,
      variant: 'on',
      reason: 'TARGETING_MATCH',
      flagMetadata: { ruleId: 'fr' },
    });

    const ready = await http(`${app.metricsUrl}/readyz`);
    expect(ready.body.details).toMatchObject({ snapshot: { kind: 'postgres', flags: 1 }, postgres: { status: 'up' }, redis: { status: 'up' } });
    expect(await app.stop()).toBe(0);
  });
});
