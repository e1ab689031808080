import { randomUUID } from 'node:crypto';
import type { ClientPrincipal } from '@flagship/oauth';
import { createDataSource } from '@flagship/persistence';
import { CHANNELS, createRedis, type PubSub, RedisKeys, RedisPubSub } from '@flagship/redis';
import { createTestEnvironment, TcpProxy, type TestEnvironment, waitFor } from '@flagship/testing';
import type { DataSource } from 'typeorm';
import { GatewayError } from '../gateway.errors';
import { createTenant } from '../testing/gateway.fixture';
import { type TenantContext, TenantContextRepository } from '../tenants/tenant-context.repository';
import { TenantStep } from './tenant.step';

// Redis reconnections take seconds (ioredis backs off up to 2 s between attempts).
jest.setTimeout(30_000);

/** The real repository, counting the reads that reach Postgres. */
class CountingRepository extends TenantContextRepository {
  finds = 0;
  override find(tenantId: string): Promise<TenantContext | undefined> {
    this.finds++;
    return super.find(tenantId);
  }
}

const principal = (tenantId: string): ClientPrincipal => ({
  clientId: 'ffc_tenant_step',
  tenantId,
  scopes: ['ai:invoke'],
  productKeys: ['core'],
  jti: randomUUID(),
  issuedAt: Math.floor(Date.now() / 1000),
  expiresAt: new Date(Date.now() + 3_600_000),
});

/** The answer of the step as the gateway would write it: the tenant's id, or the error's status and code. */
async function outcome(step: TenantStep, tenantId: string): Promise<string> {
  try {
    return (await step.resolve(principal(tenantId))).id;
  } catch (err) {
    if (err instanceof GatewayError) return `${err.status} ${err.code}`;
    throw err;
  }
}

/**
 * The gateway's tenant step on a SubscribedCache, against this file's Postgres and Redis, each behind
 * a TCP proxy of the test's own so an outage is real: announced changes, the TTL bound, 401 for a
 * tenant that does not exist, and what is (not) served while Postgres is down.
 */
describe('TenantStep (real Postgres and Redis)', () => {
  let te: TestEnvironment;
  let pgProxy: TcpProxy;
  let redisProxy: TcpProxy;
  let admin: DataSource;
  let ds: DataSource;
  let announcer: PubSub;
  const open: Array<{ close(): unknown }> = [];

  beforeAll(async () => {
    te = await createTestEnvironment();
    pgProxy = await TcpProxy.start(te.db.url);
    redisProxy = await TcpProxy.start(te.redis.url);
    admin = createDataSource({ url: te.db.url, poolSize: 2 });
    ds = createDataSource({ url: pgProxy.rewrite(te.db.url), poolSize: 2, queryTimeoutMs: 2000 });
    await Promise.all([admin.initialize(), ds.initialize()]);
    const publisher = createRedis({ url: te.redis.url, name: 'announcer' });
    announcer = new RedisPubSub(publisher, new RedisKeys(te.redis.prefix), te.redis.url, 'announcer');
    open.push(announcer, { close: () => publisher.disconnect() });
  });

  afterEach(async () => {
    await pgProxy.restore();
    await redisProxy.restore();
  });

  afterAll(async () => {
    for (const o of open) await o.close();
    await ds?.destroy();
    await admin?.destroy();
    await pgProxy?.stop();
    await redisProxy?.stop();
    await te?.teardown();
  });

  /** A started step whose Postgres and Redis go through the proxies; subscribed when it returns. */
  async function start(ttlMs: number): Promise<{ step: TenantStep; repository: CountingRepository; pubsub: PubSub }> {
    const repository = new CountingRepository(ds);
    const url = redisProxy.rewrite(te.redis.url);
    const publisher = createRedis({ url, name: 'gateway' });
    const pubsub = new RedisPubSub(publisher, new RedisKeys(te.redis.prefix), url, 'gateway');
    const step = new TenantStep(repository, ttlMs, pubsub).start();
    open.push(step, pubsub, { close: () => publisher.disconnect() });
    await waitFor(async () => step.status().subscribed);
    return { step, repository, pubsub };
  }

  const announce = (tenantId: string) => announcer.publish(CHANNELS.tenantChanged, { tenantId });

  it('reads a tenant once for many requests; an announced change is read by the next request', async () => {
    const { step, repository } = await start(60_000);
    const tenant = await createTenant(admin);
    for (let i = 0; i < 5; i++) expect((await step.resolve(principal(tenant))).entitlements).toEqual([]);
    expect(repository.finds).toBe(1);

    await admin.query(`INSERT INTO entitlements (tenant_id, product_key, tier) VALUES ($1, 'core', 'enterprise')`, [tenant]);
    await announce(tenant);
    await waitFor(async () => (await step.resolve(principal(tenant))).entitlements.length === 1, 3000, 5);
    expect(repository.finds).toBe(2);
  });

  it('a tenant with a credit purchase under an open dispute: 403 account_paused from the announcement on, served again once it closes', async () => {
    const { step } = await start(60_000);
    const tenant = await createTenant(admin);
    expect(await outcome(step, tenant)).toBe(tenant);
    await admin.query(
      `INSERT INTO credit_purchases (stripe_session_id, tenant_id, product_key, stripe_payment_intent_id, amount, currency, credits, amount_disputed, credits_taken_back, dispute_open)
       VALUES ($1, $2, 'core', $3, 2500, 'usd', 250000000, 2500, 250000000, true)`,
      [`cs_${tenant}`, tenant, `pi_${tenant}`],
    );
    await announce(tenant);
    await waitFor(async () => (await outcome(step, tenant)) === '403 account_paused', 3000, 5);
    const refusal = await step.resolve(principal(tenant)).catch((e: unknown) => e as GatewayError);
    expect((refusal as GatewayError).message).toMatch(/paused while a payment dispute/);
    // Another tenant is not touched.
    const other = await createTenant(admin);
    expect(await outcome(step, other)).toBe(other);
    await admin.query(`UPDATE credit_purchases SET dispute_open = false WHERE tenant_id = $1`, [tenant]);
    await announce(tenant);
    await waitFor(async () => (await outcome(step, tenant)) === tenant, 3000, 5);
  });

  it('a tenant that does not exist: 401 invalid_token, remembered for the TTL only, and at once when its creation is announced', async () => {
    const { step, repository } = await start(400);
    // Not a tenant id at all: Postgres is not asked.
    expect(await outcome(step, 'not-a-uuid')).toBe('401 invalid_token');
    expect(repository.finds).toBe(0);

    const announced = randomUUID();
    expect(await outcome(step, announced)).toBe('401 invalid_token');
    expect(await outcome(step, announced)).toBe('401 invalid_token');
    expect(repository.finds).toBe(1);
    await admin.query(`INSERT INTO tenants (id, name, primary_email) VALUES ($1, 'late', 'late@example.test')`, [announced]);
    await announce(announced);
    await waitFor(async () => (await outcome(step, announced)) === announced, 3000, 5);

    const unannounced = randomUUID();
    expect(await outcome(step, unannounced)).toBe('401 invalid_token');
    await admin.query(`INSERT INTO tenants (id, name, primary_email) VALUES ($1, 'quiet', 'quiet@example.test')`, [unannounced]);
    // Found once its 400 ms TTL passes; remembered for good, it never would be. 4 s tells the two
    // apart with room for a loaded machine.
    const t0 = Date.now();
    await waitFor(async () => (await outcome(step, unannounced)) === unannounced, 8000, 20);
    expect(Date.now() - t0).toBeLessThan(4000);
  });

  it('Postgres down: 503 for a tenant not held, one announced as changed, and one past its TTL; served again after', async () => {
    const { step } = await start(2000);
    const [held, changed, unseen] = await Promise.all([createTenant(admin), createTenant(admin), createTenant(admin)]);
    expect(await outcome(step, held)).toBe(held);
    expect(await outcome(step, changed)).toBe(changed);
    await pgProxy.cut();

    expect(await outcome(step, unseen)).toBe('503 service_unavailable');
    // Held and not announced: served from memory within its TTL.
    expect(await outcome(step, held)).toBe(held);
    // Announced as changed (its credits or entitlements): never served stale.
    await announce(changed);
    await waitFor(async () => (await outcome(step, changed)) === '503 service_unavailable', 3000, 5);
    expect(await outcome(step, changed)).toBe('503 service_unavailable');
    // Past its TTL: refused too.
    await waitFor(async () => (await outcome(step, held)) === '503 service_unavailable', 5000, 20);

    await pgProxy.restore();
    await waitFor(async () => (await outcome(step, unseen)) === unseen, 10_000, 50);
    expect(await outcome(step, changed)).toBe(changed);
    expect(await outcome(step, held)).toBe(held);
  });

  it('after a Redis reconnect a held tenant is served while it is re-read, through a Postgres outage, until a change is announced', async () => {
    const { step, repository, pubsub } = await start(60_000);
    const tenant = await createTenant(admin);
    expect(await outcome(step, tenant)).toBe(tenant);
    await pgProxy.cut();
    const finds = repository.finds;
    await redisProxy.cut();
    await waitFor(async () => pubsub.subscriberStatus !== 'ready');
    await redisProxy.restore();
    await waitFor(async () => pubsub.subscriberStatus === 'ready', 10_000, 20);
    // Announcements may have been missed: the next request re-reads the tenant in the background...
    await waitFor(async () => (await outcome(step, tenant)) === tenant && repository.finds > finds, 5000, 20);
    await waitFor(async () => step.status().lastError !== undefined, 5000, 20);
    // ...and, Postgres being down, keeps serving what it holds: nothing says it changed.
    for (let i = 0; i < 3; i++) expect(await outcome(step, tenant)).toBe(tenant);
    await waitFor(async () => step.status().subscribed);
    // Once a change is announced, it is refused until Postgres answers.
    await announce(tenant);
    await waitFor(async () => (await outcome(step, tenant)) === '503 service_unavailable', 3000, 5);
    await pgProxy.restore();
    await waitFor(async () => (await outcome(step, tenant)) === tenant, 10_000, 50);
  });
});
