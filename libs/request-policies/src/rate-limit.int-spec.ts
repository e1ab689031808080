import { randomUUID } from 'node:crypto';
import { Controller, Get, HttpCode, Logger, Post } from '@nestjs/common';
import { CommonProblems, ProblemException } from '@flagship/problem-details';
import type { RunningApp } from '@flagship/service-kit';
import { createTestEnvironment, DisposableRedis, http, waitFor, type HttpResult, type TestEnvironment } from '@flagship/testing';
import { RateLimit, SkipRateLimit } from './rate-limit.decorator';
import { startProbe } from './policies-probe.fixture';

@Controller()
class LimitedController {
  @Get('ping')
  ping(): { ok: true } {
    return { ok: true };
  }

  @Get('missing')
  missing(): never {
    throw new ProblemException(CommonProblems['not-found'], 'There is no such thing.');
  }

  @Post('signin')
  @HttpCode(200)
  @RateLimit({ per: 'ip' })
  signin(): { signedIn: true } {
    return { signedIn: true };
  }

  @Post('token')
  @HttpCode(200)
  @RateLimit({ per: 'ip' })
  token(): { token: string } {
    return { token: 't' };
  }

  @Get('unlimited')
  @SkipRateLimit()
  unlimited(): { ok: true } {
    return { ok: true };
  }
}

const POLICIES = { limits: { free: 5, standard: 8, premium: 12 }, ipLimitPerMinute: 4 };

const tenant = (plan = 'free'): Record<string, string> => ({
  'x-test-caller': `user:${randomUUID()}`,
  'x-test-tenant': randomUUID(),
  'x-test-plan': plan,
});
/** A documentation address (RFC 5737) of a test's own, so anonymous budgets do not collide. */
let lastOctet = 0;
const newAddress = (): string => `198.51.100.${++lastOctet}`;

const limitHeaders = (res: HttpResult) => ({
  limit: res.headers.get('ratelimit-limit'),
  remaining: res.headers.get('ratelimit-remaining'),
  reset: res.headers.get('ratelimit-reset'),
});

describe('rate limits through real HTTP and Redis', () => {
  let te: TestEnvironment;
  let svc: RunningApp;
  let replica: RunningApp;

  beforeAll(async () => {
    te = await createTestEnvironment();
    svc = await startProbe(te.env, { policies: POLICIES, controllers: [LimitedController], trustProxy: 1 });
    // A second replica on the same Redis prefix; it does not trust X-Forwarded-For.
    replica = await startProbe(te.env, { policies: POLICIES, controllers: [LimitedController] });
  });

  afterAll(async () => {
    await svc?.close();
    await replica?.close();
    await te?.teardown();
  });

  const ping = (app: RunningApp, headers: Record<string, string>) => http(`${app.url}/ping`, { headers });

  it('sends RateLimit headers on every answer, and Remaining counts down', async () => {
    const who = tenant();
    const seen = [];
    for (let i = 0; i < 3; i++) {
      const res = await ping(svc, who);
      expect(res.status).toBe(200);
      seen.push(limitHeaders(res));
    }
    expect(seen.map((h) => h.limit)).toEqual(['5', '5', '5']);
    expect(seen.map((h) => h.remaining)).toEqual(['4', '3', '2']);
    for (const h of seen) {
      expect(Number(h.reset)).toBeGreaterThanOrEqual(1);
      expect(Number(h.reset)).toBeLessThanOrEqual(60);
    }
  });

  it('keeps the headers on an error the handler throws (and counts it)', async () => {
    const who = tenant();
    const res = await http(`${svc.url}/missing`, { headers: who });
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(limitHeaders(res)).toMatchObject({ limit: '5', remaining: '4' });
    expect(limitHeaders(await ping(svc, who)).remaining).toBe('3');
  });

  it('refuses with a 429 problem and Retry-After once the budget is spent', async () => {
    const who = tenant();
    for (let i = 0; i < 5; i++) expect((await ping(svc, who)).status).toBe(200);
    const res = await ping(svc, who);
    expect(res.status).toBe(429);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({ type: '/problems/rate-limited', status: 429, title: expect.any(String) });
    expect(res.body.detail).toMatch(/try again later/i);
    expect(res.body.instance).toBe(res.headers.get('x-request-id'));
    const retryAfter = Number(res.headers.get('retry-after'));
    // Nothing can pass before the current window ends and the spent one has decayed enough.
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(120);
    expect(limitHeaders(res)).toEqual({ limit: '5', remaining: '0', reset: String(retryAfter) });
  });

  it('keeps a separate budget per tenant', async () => {
    const spent = tenant();
    for (let i = 0; i < 6; i++) await ping(svc, spent);
    expect((await ping(svc, spent)).status).toBe(429);
    // Another user of the same tenant shares its budget...
    expect((await ping(svc, { ...spent, 'x-test-caller': `user:${randomUUID()}` })).status).toBe(429);
    // ...another tenant does not.
    const fresh = await ping(svc, tenant());
    expect(fresh.status).toBe(200);
    expect(limitHeaders(fresh).remaining).toBe('4');
  });

  it('sets the limit by the tenant plan; without a known plan the caller is charged at the free limit', async () => {
    expect(limitHeaders(await ping(svc, tenant('free'))).limit).toBe('5');
    expect(limitHeaders(await ping(svc, tenant('standard'))).limit).toBe('8');
    expect(limitHeaders(await ping(svc, tenant('premium'))).limit).toBe('12');
    // Two callers of one plan-less tenant: separate budgets, as the tenant's limit is unknown.
    const planless = tenant('platinum');
    expect(limitHeaders(await ping(svc, planless))).toMatchObject({ limit: '5', remaining: '4' });
    expect(limitHeaders(await ping(svc, planless)).remaining).toBe('3');
    expect(limitHeaders(await ping(svc, { ...planless, 'x-test-caller': `user:${randomUUID()}` })).remaining).toBe('4');
    const premium = tenant('premium');
    for (let i = 0; i < 12; i++) expect((await ping(svc, premium)).status).toBe(200);
    expect((await ping(svc, premium)).status).toBe(429);
  });

  it('limits a caller without a tenant by caller id, and anonymous requests by address, at the free limit', async () => {
    const callerA = { 'x-test-caller': `client:${randomUUID()}` };
    const callerB = { 'x-test-caller': `client:${randomUUID()}` };
    expect(limitHeaders(await ping(svc, callerA))).toMatchObject({ limit: '5', remaining: '4' });
    expect(limitHeaders(await ping(svc, callerA)).remaining).toBe('3');
    expect(limitHeaders(await ping(svc, callerB)).remaining).toBe('4');

    const here = { 'x-forwarded-for': newAddress() };
    const there = { 'x-forwarded-for': newAddress() };
    expect(limitHeaders(await ping(svc, here))).toMatchObject({ limit: '5', remaining: '4' });
    expect(limitHeaders(await ping(svc, here)).remaining).toBe('3');
    expect(limitHeaders(await ping(svc, there)).remaining).toBe('4');
  });

  it('limits per-ip routes by client address, in one budget across them, whoever the caller', async () => {
    const address = newAddress();
    const post = (path: string, who: Record<string, string>) => http(`${svc.url}${path}`, { method: 'POST', headers: { 'x-forwarded-for': address, ...who } });
    const tenantA = tenant();
    const results = [
      await post('/signin', tenantA),
      await post('/token', tenant()),
      await post('/signin', {}),
      await post('/token', tenant('premium')),
    ];
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(results.map((r) => limitHeaders(r).limit)).toEqual(['4', '4', '4', '4']);
    expect(results.map((r) => limitHeaders(r).remaining)).toEqual(['3', '2', '1', '0']);
    const refused = await post('/signin', tenant('premium'));
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    // Another address still gets in; the per-ip routes did not spend tenant A's budget.
    expect((await http(`${svc.url}/signin`, { method: 'POST', headers: { 'x-forwarded-for': newAddress() } })).status).toBe(200);
    expect(limitHeaders(await ping(svc, tenantA)).remaining).toBe('4');
  });

  it('never limits or counts /healthz, /readyz, /metrics and @SkipRateLimit routes', async () => {
    const who = { 'x-forwarded-for': newAddress() };
    for (const path of ['/healthz', '/healthz/', '/readyz', '/metrics', '/unlimited']) {
      for (let i = 0; i < 6; i++) {
        const res = await http(`${svc.url}${path}`, { headers: who });
        // /metrics is served on the internal port only; here it is refused, and still never counted.
        expect(res.status).toBe(path === '/metrics' ? 404 : 200);
        expect(res.headers.get('ratelimit-limit')).toBeNull();
      }
    }
    expect(limitHeaders(await ping(svc, who)).remaining).toBe('4');
  });

  it('shares one budget between two replicas', async () => {
    const who = tenant();
    const apps = [svc, replica, svc, replica, svc];
    const remaining = [];
    for (const app of apps) {
      const res = await ping(app, who);
      expect(res.status).toBe(200);
      remaining.push(limitHeaders(res).remaining);
    }
    expect(remaining).toEqual(['4', '3', '2', '1', '0']);
    expect((await ping(replica, who)).status).toBe(429);
    expect((await ping(svc, who)).status).toBe(429);
  });

  it('ignores X-Forwarded-For unless the app trusts the proxy', async () => {
    // The replica does not trust proxies: both requests come from 127.0.0.1 and share its budget.
    const first = limitHeaders(await ping(replica, { 'x-forwarded-for': newAddress() }));
    const second = limitHeaders(await ping(replica, { 'x-forwarded-for': newAddress() }));
    expect(Number(second.remaining)).toBe(Number(first.remaining) - 1);
  });
});

describe('rate limits over a short window', () => {
  let te: TestEnvironment;
  let svc: RunningApp;

  beforeAll(async () => {
    te = await createTestEnvironment();
    svc = await startProbe(te.env, { policies: { limits: { free: 2 }, windowMs: 1000 }, controllers: [LimitedController] });
  });

  afterAll(async () => {
    await svc?.close();
    await te?.teardown();
  });

  it('lets the caller back in once Retry-After has passed', async () => {
    const who = tenant();
    const ping = () => http(`${svc.url}/ping`, { headers: who });
    expect((await ping()).status).toBe(200);
    expect((await ping()).status).toBe(200);
    const refused = await ping();
    expect(refused.status).toBe(429);
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(2);
    await new Promise((r) => setTimeout(r, retryAfter * 1000));
    expect((await ping()).status).toBe(200);
  });
});

describe('rate limits while Redis is down', () => {
  let te: TestEnvironment;
  let redis: DisposableRedis;
  let svc: RunningApp;

  beforeAll(async () => {
    redis = await DisposableRedis.start();
    te = await createTestEnvironment({ REDIS_URL: redis.url });
    svc = await startProbe(te.env, { policies: POLICIES, controllers: [LimitedController] });
  });

  afterAll(async () => {
    await svc?.close();
    await redis?.stop();
    await te?.teardown();
  });

  it('serves uncounted without headers, warns once per outage, and counts again once Redis is back', async () => {
    const who = tenant();
    const ping = () => http(`${svc.url}/ping`, { headers: who });
    expect(limitHeaders(await ping()).remaining).toBe('4');

    const warn = jest.spyOn(Logger.prototype, 'warn');
    try {
      await redis.stop();
      // More requests than the budget holds: none is refused, none carries invented numbers.
      for (let i = 0; i < 7; i++) {
        const res = await ping();
        expect(res.status).toBe(200);
        expect(res.headers.get('ratelimit-limit')).toBeNull();
      }
      const outageWarnings = warn.mock.calls.filter(([message]) => /rate limits are not enforced/.test(String(message)));
      expect(outageWarnings).toHaveLength(1);
    } finally {
      warn.mockRestore();
    }

    await redis.start();
    // The restarted Redis kept nothing (no persistence): the budget starts over.
    const back = await waitFor(async () => {
      const res = await ping();
      return res.headers.get('ratelimit-limit') === '5' ? res : undefined;
    }, 10000);
    expect(back.status).toBe(200);
    expect(limitHeaders(back).remaining).toBe('4');
  });
});
