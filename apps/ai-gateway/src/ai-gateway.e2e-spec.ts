/**
 * The built gateway started as processes, as `npm start` and the Docker image start it, against one
 * Postgres and Redis: the credit reservation has to hold across replicas, not only within one event
 * loop. Needs the build first: `npx nx run ai-gateway:build` (npm test builds everything first).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { DATA_SOURCE } from '@flagship/persistence';
import type { RunningApp } from '@flagship/service-kit';
import { createTestEnvironment, FakeModelUpstream, freePort, http, type TestEnvironment, waitFor } from '@flagship/testing';
import { balanceOf, createTenant, type IssueToken, ledgerRows, type Sql, startIssuer } from './testing/gateway.fixture';

const root = join(__dirname, '..', '..', '..');
const main = join(root, 'dist/apps/ai-gateway/apps/ai-gateway/src/main.js');
const ISSUER = 'https://api.flagship.test';
const AUDIENCE = 'flagship-api';

interface Started {
  url: string;
  child: ChildProcess;
  stop: () => Promise<number | null>;
}

async function startBuilt(env: NodeJS.ProcessEnv): Promise<Started> {
  if (!existsSync(main)) throw new Error(`${main} is missing: run \`npx nx run ai-gateway:build\` first`);
  const port = await freePort();
  const child = spawn(process.execPath, [main], { env: { ...env, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (c) => (out += c));
  child.stderr!.on('data', (c) => (out += c));
  const url = `http://127.0.0.1:${port}`;
  await waitFor(
    async () => {
      if (child.exitCode !== null) throw new Error(`exited ${child.exitCode}: ${out}`);
      return (await http(`${url}/readyz`).catch(() => ({ status: 0 }))).status === 200;
    },
    30000,
    100,
  );
  return {
    url,
    child,
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
  let issue: IssueToken;
  let ds: Sql;
  const gateways: Started[] = [];

  beforeAll(async () => {
    te = await createTestEnvironment();
    fake = await FakeModelUpstream.start();
    ({ app: issuer, issue } = await startIssuer(te, ISSUER, AUDIENCE));
    ds = issuer.app.get<Sql>(DATA_SOURCE);
    const env = { ...te.env, LOG_LEVEL: 'warn', OAUTH_ISSUER: ISSUER, OAUTH_AUDIENCE: AUDIENCE, PROVIDER_INHOUSE_URL: fake.url };
    gateways.push(...(await Promise.all([startBuilt(env), startBuilt(env)])));
  }, 60_000);

  afterAll(async () => {
    for (const g of gateways) expect(await g.stop()).toBe(0);
    await issuer?.close();
    await fake?.close();
    await te?.teardown();
  });

  it('credit for exactly 20 requests, 200 fired at once at both: at most 20 succeed, the rest 402, debits equal the fall', async () => {
    // 'one two three' with max_tokens 4: 3 input and 4 output tokens at the fake, 11 micro-credits on fake-chat-1.
    const COST = 11;
    const START = 20 * COST;
    const tenant = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: START });
    const apiKey = await issue(tenant);
    const clients = gateways.map(
      (g) => new OpenAI({ baseURL: `${g.url}/v1`, apiKey, defaultHeaders: { 'x-service-product-key': 'core' }, maxRetries: 0, timeout: 20_000 }),
    );
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        clients[i % 2]!.chat.completions.create({ model: 'fake-chat-1', max_tokens: 4, messages: [{ role: 'user', content: 'one two three' }] }).then(
          (r) => ({ status: 200, tokens: r.usage?.total_tokens }),
          (e: { status?: number; code?: string }) => ({ status: e.status, code: e.code }),
        ),
      ),
    );
    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status === 402);
    expect(ok.length).toBeGreaterThan(0);
    expect(ok.length).toBeLessThanOrEqual(20);
    expect(refused.length).toBe(200 - ok.length);
    expect(refused.every((r) => 'code' in r && r.code === 'insufficient_credits')).toBe(true);
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
  }, 60_000);

  it('a later request still gets a 402 once the credit is spent, and one succeeds after a grant', async () => {
    const tenant = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: 0 });
    const client = new OpenAI({ baseURL: `${gateways[0]!.url}/v1`, apiKey: await issue(tenant), defaultHeaders: { 'x-service-product-key': 'core' }, maxRetries: 0 });
    const ask = () => client.chat.completions.create({ model: 'fake-chat-1', max_tokens: 4, messages: [{ role: 'user', content: 'one two three' }] });
    await expect(ask()).rejects.toMatchObject({ status: 402, code: 'insufficient_credits' });
    await ds.query(`UPDATE credit_balances SET balance = balance + 11 WHERE tenant_id = $1`, [tenant]);
    await expect(ask()).resolves.toMatchObject({ object: 'chat.completion' });
  });
});
