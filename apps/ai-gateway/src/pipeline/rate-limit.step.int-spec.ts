import { createRedis, RedisKeys } from '@flagship/redis';
import { RateLimitService, resolveRequestPoliciesOptions } from '@flagship/request-policies';
import { createTestRedisPrefix, type TestRedisPrefix } from '@flagship/testing';
import type Redis from 'ioredis';
import { GatewayError } from '../gateway.errors';
import { RateLimitStep } from './rate-limit.step';

/**
 * The gateway's rate-limit step against real Redis: the client counters (TAKE) and the tenant's
 * sliding window (request-policies' limiter) of one event-loop turn's requests go in one pipeline,
 * and each request still gets its own decisions.
 */
describe('RateLimitStep', () => {
  let prefix: TestRedisPrefix;
  let redis: Redis;
  let keys: RedisKeys;
  let step: RateLimitStep;
  let n = 0;
  const id = (what: string) => `${what}-${++n}`;

  beforeAll(async () => {
    prefix = createTestRedisPrefix();
    redis = createRedis({ url: prefix.url, name: 'rate-limit-step-test' });
    await new Promise((resolve) => redis.once('ready', resolve));
    keys = new RedisKeys(prefix.prefix);
    const limiter = new RateLimitService(redis, keys, resolveRequestPoliciesOptions({ windowMs: 60_000 }));
    step = new RateLimitStep(redis, keys, { requestsPerMinute: 2, tokensPerMinute: 1_000_000 }, { limiter, perPlan: { free: 3, standard: 100, premium: 100 } });
  });

  afterAll(async () => {
    await prefix?.cleanup();
    redis?.disconnect();
  });

  afterEach(() => jest.restoreAllMocks());

  const outcome = (p: Promise<unknown>) =>
    p.then(
      () => 'ok',
      (e: unknown) => (e instanceof GatewayError ? `${e.status} ${/for this (\w+)/.exec(e.message)?.[1] ?? e.code}` : String(e)),
    );

  it("counts one turn's requests of several clients and tenants in one round trip, each with its own decisions", async () => {
    const [free, standard] = [{ id: id('tenant'), plan: 'free' }, { id: id('tenant'), plan: 'standard' }];
    const [a1, a2, a3, a4, b1, lone] = ['a1', 'a2', 'a3', 'a4', 'b1', 'lone'].map(id);
    // Spies that pass through to the real client: how many times this turn went to Redis.
    const pipelines = jest.spyOn(redis, 'pipeline');
    const evalshas = jest.spyOn(redis, 'evalsha');
    const results = await Promise.all([
      // Four clients of a free tenant (3 a minute together), one request each: the fourth is over the tenant's.
      outcome(step.take(a1!, 10, free)),
      outcome(step.take(a2!, 10, free)),
      outcome(step.take(a3!, 10, free)),
      outcome(step.take(a4!, 10, free)),
      // One client of a standard tenant, three requests: the third is over the client's 2.
      outcome(step.take(b1!, 10, standard)),
      outcome(step.take(b1!, 10, standard)),
      outcome(step.take(b1!, 10, standard)),
      // A client without a tenant limit.
      outcome(step.take(lone!, 10)),
    ]);
    expect(results).toEqual(['ok', 'ok', 'ok', '429 tenant', 'ok', 'ok', '429 client', 'ok']);
    expect({ pipelines: pipelines.mock.calls.length, evalshas: evalshas.mock.calls.length }).toEqual({ pipelines: 1, evalshas: 0 });
  });

  it('answers the x-ratelimit headers of the client counters', async () => {
    const { headers } = await step.take(id('client'), 1_000, { id: id('tenant'), plan: 'standard' });
    expect(headers).toMatchObject({ 'x-ratelimit-remaining-requests': '1', 'x-ratelimit-remaining-tokens': String(1_000_000 - 1_000) });
  });

  it("a refused request's tokens are given back: one too large for the window, or one refused later (credit, budget), spends none of it", async () => {
    const small = new RateLimitStep(redis, keys, { requestsPerMinute: 100, tokensPerMinute: 1_000 });
    const client = id('client');
    // Larger than the whole window: refused, and not left counted against the next requests.
    const tooLarge = await small.take(client, 5_000).catch((e: GatewayError) => e);
    expect(tooLarge).toMatchObject({ status: 429, headers: { 'x-ratelimit-remaining-tokens': '1000' } });
    const first = await small.take(client, 600);
    expect(first.headers['x-ratelimit-remaining-tokens']).toBe('400');
    // Refused after it was counted (the reservation's 402): its 600 go back, and the answer says so.
    expect(small.refuse(first)['x-ratelimit-remaining-tokens']).toBe('1000');
    const next = await small.take(client, 900);
    expect(next.headers['x-ratelimit-remaining-tokens']).toBe('100');
    expect(await redis.get(next.tokensKey)).toBe('900');
  });

  it('a give-back to a window whose counter is gone does not bring it back (below zero, with no expiry)', async () => {
    const taken = await step.take(id('client'), 50);
    await redis.del(taken.tokensKey);
    step.refuse(taken);
    // The give-back is sent before this turn's next command on the same connection.
    await step.take(id('client'), 1);
    expect(await redis.exists(taken.tokensKey)).toBe(0);
  });

  it('loads both scripts again after Redis lost them (SCRIPT FLUSH, as after a restart)', async () => {
    const tenant = { id: id('tenant'), plan: 'free' };
    await step.take(id('client'), 10, tenant);
    await redis.script('FLUSH');
    const results = await Promise.all([outcome(step.take(id('client'), 10, tenant)), outcome(step.take(id('client'), 10, tenant)), outcome(step.take(id('client'), 10, tenant))]);
    // The tenant's 3: one spent before the flush, two now, the third refused (its count survived the flush).
    expect(results).toEqual(['ok', 'ok', '429 tenant']);
  });

  // Last: after a failure the limiter leaves Redis alone for a second (every tenant then uncounted).
  it('a tenant run failing alone serves the request uncounted by its tenant (fail open); the client counters still count', async () => {
    const tenant = { id: id('tenant'), plan: 'free' };
    // A string where the limiter keeps a hash: its script run fails with WRONGTYPE, TAKE's does not.
    await redis.set(keys.tenant(tenant.id, 'rl', 'gateway'), 'not a hash');
    const client = id('client');
    expect(await Promise.all([outcome(step.take(client, 10, tenant)), outcome(step.take(client, 10, tenant)), outcome(step.take(client, 10, tenant))])).toEqual([
      'ok',
      'ok',
      '429 client',
    ]);
  });
});
