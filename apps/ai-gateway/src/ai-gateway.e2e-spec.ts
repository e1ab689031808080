/**
 * The built gateway started as processes, as `npm start` and the Docker image start it, against one
 * Postgres and Redis: the credit reservation has to hold across replicas, not only within one event
 * loop. The access token comes from the built management-api's /oauth/token, as product backends get
 * theirs. Needs the builds first: `npx nx run-many -t build -p management-api,ai-gateway` (npm test
 * builds everything first).
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { DATA_SOURCE } from '@flagship/persistence';
import type { RunningApp } from '@flagship/service-kit';
import { hashSecret } from '@flagship/oauth';
import { createTestEnvironment, FakeModelUpstream, freePort, http, startBuiltProcess, type TestEnvironment, waitFor } from '@flagship/testing';
import { balanceOf, createTenant, ledgerRows, type Sql, startIssuer } from './testing/gateway.fixture';

const root = join(__dirname, '..', '..', '..');
const mainOf = (app: string) => join(root, `dist/apps/${app}/apps/${app}/src/main.js`);
const AUDIENCE = 'flagship-api';

interface Started {
  url: string;
  child: ChildProcess;
  stop: () => Promise<number | null>;
  /** What the process printed (the tail): said when a check fails, so a failure explains itself. */
  output: () => string;
}

async function startBuilt(app: string, env: NodeJS.ProcessEnv, port?: number): Promise<Started> {
  const main = mainOf(app);
  if (!existsSync(main)) throw new Error(`${main} is missing: run \`npx nx run ${app}:build\` first`);
  const { url, child, output } = await startBuiltProcess(main, env, port);
  return {
    url,
    child,
    output: () => output().slice(-4000),
    stop: async () => {
      if (child.exitCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      const [code] = await once(child, 'exit');
      return code as number | null;
    },
  };
}

describe('two gateway processes sharing one balance', () => {
  let te: TestEnvironment;
  let fake: FakeModelUpstream;
  let issuer: RunningApp;
  let ds: Sql;
  let managementApi: Started;
  const gateways: Started[] = [];

  /** An OAuth client of the tenant, stored as management-api stores it, and a token from its /oauth/token. */
  const clientToken = async (tenantId: string): Promise<string> => {
    const clientId = `ffc_e2e${randomBytes(8).toString('hex')}`;
    const secret = `ffs_${randomBytes(24).toString('base64url')}`;
    await ds.query(`INSERT INTO oauth_clients (tenant_id, client_id, name, secret_hash, scopes, product_keys) VALUES ($1, $2, 'e2e', $3, $4, $5)`, [
      tenantId,
      clientId,
      await hashSecret(secret),
      ['ai:invoke'],
      ['core'],
    ]);
    const res = await http<{ access_token: string }>(`${managementApi.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: secret }).toString(),
    });
    expect(res.status).toBe(200);
    return res.body.access_token;
  };

  beforeAll(async () => {
    te = await createTestEnvironment();
    fake = await FakeModelUpstream.start();
    const port = await freePort();
    const issuerUrl = `http://127.0.0.1:${port}`;
    // Only for this test's SQL: tokens come from management-api.
    ({ app: issuer } = await startIssuer(te, issuerUrl, AUDIENCE));
    ds = issuer.app.get<Sql>(DATA_SOURCE);
    managementApi = await startBuilt(
      'management-api',
      { ...te.env, NODE_ENV: 'development', IDP_MODE: 'dev', LOG_LEVEL: 'warn', PUBLIC_BASE_URL: issuerUrl, OAUTH_ISSUER: issuerUrl, OAUTH_AUDIENCE: AUDIENCE },
      port,
    );
    const env = { ...te.env, LOG_LEVEL: 'warn', OAUTH_ISSUER: issuerUrl, OAUTH_AUDIENCE: AUDIENCE, PROVIDER_INHOUSE_URL: fake.url };
    gateways.push(...(await Promise.all([startBuilt('ai-gateway', env), startBuilt('ai-gateway', env)])));
  }, 90_000);

  afterAll(async () => {
    // Everything stopped first, then judged: a failed check must not leave management-api running.
    const stopped = await Promise.all(gateways.map(async (g) => ({ code: await g.stop(), output: g.output() })));
    await managementApi?.stop();
    await issuer?.close();
    await fake?.close();
    await te?.teardown();
    for (const { code, output } of stopped) expect([code, code === 0 ? '' : output]).toEqual([0, '']);
  });

  it('credit for exactly 20 requests, 200 fired at once at both: at most 20 succeed, the rest 402, debits equal the fall', async () => {
    // 'one two three' with max_tokens 4: 3 input and 4 output tokens at the fake, 11 micro-credits on fake-chat-1.
    const COST = 11;
    const START = 20 * COST;
    const tenant = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: START });
    // A low-balance threshold the first debit crosses: both processes settle below it, one crossing is recorded.
    await ds.query(`INSERT INTO low_balance_alerts (tenant_id, threshold) VALUES ($1, $2)`, [tenant, START - COST]);
    const apiKey = await clientToken(tenant);
    const clients = gateways.map(
      (g) => new OpenAI({ baseURL: `${g.url}/v1`, apiKey, defaultHeaders: { 'x-service-product-key': 'core' }, maxRetries: 0, timeout: 20_000 }),
    );
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        clients[i % 2]!.chat.completions.create({ model: 'fake-chat-1', max_tokens: 4, messages: [{ role: 'user', content: 'one two three' }] }).then(
          (r) => ({ status: 200, tokens: r.usage?.total_tokens }),
          (e: { status?: number; code?: string; message?: string }) => ({ status: e.status, code: e.code, message: e.message }),
        ),
      ),
    );
    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status === 402);
    expect(ok.length).toBeGreaterThan(0);
    expect(ok.length).toBeLessThanOrEqual(20);
    // Anything else (a 5xx, a connection error) is shown with what each gateway printed.
    const others = results.filter((r) => r.status !== 200 && r.status !== 402);
    expect([others.slice(0, 5), others.length === 0 ? [] : gateways.map((g) => `exit ${g.child.exitCode}: ${g.output()}`)]).toEqual([[], []]);
    expect(refused.length).toBe(200 - ok.length);
    expect(refused.every((r) => 'code' in r && r.code === 'insufficient_credits')).toBe(true);
    // Where to buy credits: the console's billing page at management-api's address (the gateways' OAUTH_ISSUER).
    expect(refused.every((r) => 'message' in r && r.message?.includes(`${managementApi.url}/console/billing`))).toBe(true);
    expect(ok.every((r) => 'tokens' in r && r.tokens === 7)).toBe(true);
    // The provider was called for the admitted requests only.
    expect(fake.calls.chat).toBe(ok.length);

    await waitFor(async () => (await ledgerRows(ds, tenant)).every((r) => r.status !== 'pending') || undefined, 10_000);
    const rows = await ledgerRows(ds, tenant);
    const { balance, reserved } = await balanceOf(ds, tenant);
    expect(rows.filter((r) => r.status === 'succeeded')).toHaveLength(ok.length);
    expect(rows).toHaveLength(ok.length);
    expect(rows.every((r) => Number(r.debit) === COST && r.input_tokens === 3 && r.output_tokens === 4)).toBe(true);
    expect(reserved).toBe(0);
    expect(balance).toBeGreaterThanOrEqual(-COST);
    expect(rows.reduce((sum, r) => sum + Number(r.debit), 0)).toBe(START - balance);
    // More settlements below the threshold, one in each process, record nothing more: the crossing was
    // recorded once, and no grant has taken the balance back above the threshold (this SQL top-up, under a
    // threshold raised by SQL to stay above it, is no grant and re-arms nothing).
    await ds.query(`UPDATE low_balance_alerts SET threshold = 1000000 WHERE tenant_id = $1`, [tenant]);
    await ds.query(`UPDATE credit_balances SET balance = balance + 2000 WHERE tenant_id = $1`, [tenant]);
    for (const c of clients) await c.chat.completions.create({ model: 'fake-chat-1', max_tokens: 4, messages: [{ role: 'user', content: 'one two three' }] });
    await waitFor(async () => (await ledgerRows(ds, tenant)).every((r) => r.status !== 'pending') || undefined, 10_000);
    const crossings = await ds.query<Array<{ threshold: string }>>(`SELECT threshold::text FROM low_balance_crossings WHERE tenant_id = $1`, [tenant]);
    expect(crossings).toEqual([{ threshold: String(START - COST) }]);
  }, 60_000);

  it('a later request still gets a 402 once the credit is spent, and one succeeds after a grant that covers its estimate', async () => {
    const tenant = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: 0 });
    const client = new OpenAI({ baseURL: `${gateways[0]!.url}/v1`, apiKey: await clientToken(tenant), defaultHeaders: { 'x-service-product-key': 'core' }, maxRetries: 0 });
    const ask = () => client.chat.completions.create({ model: 'fake-chat-1', max_tokens: 4, messages: [{ role: 'user', content: 'one two three' }] });
    await expect(ask()).rejects.toMatchObject({ status: 402, code: 'insufficient_credits' });
    // 11 would pay for it, but admission wants its whole estimate (every body byte a token, max_tokens x n) covered.
    await ds.query(`UPDATE credit_balances SET balance = balance + 11 WHERE tenant_id = $1`, [tenant]);
    await expect(ask()).rejects.toMatchObject({ status: 402, code: 'insufficient_credits' });
    await ds.query(`UPDATE credit_balances SET balance = balance + 1000 WHERE tenant_id = $1`, [tenant]);
    await expect(ask()).resolves.toMatchObject({ object: 'chat.completion' });
  });
});
