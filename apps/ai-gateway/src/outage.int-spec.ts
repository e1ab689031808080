import OpenAI, { InternalServerError } from 'openai';
import type { DataSource } from 'typeorm';
import { DATA_SOURCE } from '@flagship/persistence';
import type { RunningApp } from '@flagship/service-kit';
import { createTestEnvironment, FakeModelUpstream, http, TcpProxy, type TestEnvironment, waitFor } from '@flagship/testing';
import type { GatewayPipeline } from './gateway.pipeline';
import { balanceOf, createTenant, type IssueToken, ledgerRows, startGateway, startIssuer } from './testing/gateway.fixture';

// Outages and reconnections take seconds (ioredis backs off up to 2 s between attempts).
jest.setTimeout(60_000);

/**
 * Postgres or Redis unreachable for this gateway alone (a TCP proxy of this test's own between it and
 * the shared servers): 503 in OpenAI's body with retry-after, never a 500, no provider call, and the
 * gateway recovers by itself.
 */
describe('ai-gateway with a dependency down', () => {
  let te: TestEnvironment;
  let fake: FakeModelUpstream;
  let issuer: RunningApp;
  let issue: IssueToken;
  let pgProxy: TcpProxy;
  let redisProxy: TcpProxy;
  let gw: RunningApp & { pipeline: GatewayPipeline };
  let ds: DataSource;
  let client: OpenAI;
  let tenant: string;
  const chat = { model: 'fake-chat-1', messages: [{ role: 'user' as const, content: 'hello' }] };

  beforeAll(async () => {
    te = await createTestEnvironment();
    fake = await FakeModelUpstream.start();
    ({ app: issuer, issue } = await startIssuer(te, 'https://api.flagship.test', 'flagship-api'));
    ds = issuer.app.get<DataSource>(DATA_SOURCE);
    pgProxy = await TcpProxy.start(te.db.url);
    redisProxy = await TcpProxy.start(te.env['REDIS_URL']!);
    const db = new URL(pgProxy.rewrite(te.db.url));
    const redis = new URL(redisProxy.rewrite(te.env['REDIS_URL']!));
    gw = await startGateway(te, {
      DATABASE_URL: db.toString(),
      REDIS_URL: redis.toString(),
      OAUTH_ISSUER: 'https://api.flagship.test',
      PROVIDER_INHOUSE_URL: fake.url,
    });
    tenant = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: 100_000 });
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: await issue(tenant), defaultHeaders: { 'x-service-product-key': 'core' }, maxRetries: 0 });
    await client.chat.completions.create(chat); // token and tenant cached, connections open
  });

  afterAll(async () => {
    await gw?.close();
    await issuer?.close();
    await pgProxy?.stop();
    await redisProxy?.stop();
    await fake?.close();
    await te?.teardown();
  });

  const expect503 = async () => {
    const calls = fake.calls.chat;
    const err: unknown = await client.chat.completions.create(chat).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(InternalServerError);
    expect(err).toMatchObject({ status: 503, code: 'service_unavailable', type: 'server_error' });
    expect((err as InternalServerError).headers?.get('retry-after')).toBe('1');
    expect(fake.calls.chat).toBe(calls);
  };

  const recovers = () => waitFor(async () => (await client.chat.completions.create(chat).then(() => true, () => false)) || undefined, 20_000, 200);

  it('Redis down: 503 with retry-after, no row, nothing held (the reservation made meanwhile is taken back); then served again', async () => {
    await gw.pipeline.drain();
    const rowsBefore = (await ledgerRows(ds, tenant)).length;
    await redisProxy.cut();
    await expect503();
    await gw.pipeline.drain();
    expect(await ledgerRows(ds, tenant)).toHaveLength(rowsBefore);
    expect((await balanceOf(ds, tenant)).reserved).toBe(0);
    await redisProxy.restore();
    await recovers();
  });

  it('Postgres down: 503 with retry-after, no row, nothing held; then served again', async () => {
    await gw.pipeline.drain();
    const rowsBefore = (await ledgerRows(ds, tenant)).length;
    await pgProxy.cut();
    await expect503();
    await pgProxy.restore();
    await recovers();
    await gw.pipeline.drain();
    const rows = await ledgerRows(ds, tenant);
    expect(rows.length).toBeGreaterThan(rowsBefore);
    expect(rows.every((r) => r.status === 'succeeded')).toBe(true);
    expect((await balanceOf(ds, tenant)).reserved).toBe(0);
    // Nest's readiness agrees again.
    expect((await http(`${gw.url}/readyz`)).status).toBe(200);
  });
});
