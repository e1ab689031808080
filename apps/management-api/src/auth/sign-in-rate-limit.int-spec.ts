import { ManagementApiFixture } from '../testing/management-api.fixture';

describe('per-address limits on unauthenticated endpoints (real HTTP, Redis)', () => {
  let f: ManagementApiFixture;

  beforeAll(async () => {
    f = await ManagementApiFixture.start({ RATE_LIMIT_IP_PER_MINUTE: '5' });
  });
  afterAll(async () => {
    await f?.stop();
  });

  it('sign-in, dev IdP and token endpoints share one budget per client address; 429 with Retry-After past it', async () => {
    const statuses: number[] = [];
    const limits: Array<string | null> = [];
    for (const [method, path, json] of [
      ['POST', '/api/v1/auth/login', { idToken: 'a.b.c' }],
      ['POST', '/dev/idp/token', { email: 'x@flagship.test', password: 'wrong-password' }],
      ['POST', '/api/v1/auth/forgot-password', { email: 'x@flagship.test' }],
      ['POST', '/api/v1/auth/login', { idToken: 'a.b.c' }],
      ['POST', '/dev/idp/token', { email: 'x@flagship.test', password: 'wrong-password' }],
    ] as const) {
      const r = await f.call(method, path, { json });
      statuses.push(r.status);
      limits.push(r.headers.get('ratelimit-remaining'));
    }
    expect(statuses.every((s) => s !== 429)).toBe(true);
    expect(limits).toEqual(['4', '3', '2', '1', '0']);
    const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: 'x', client_secret: 'y' });
    const token = await fetch(`${f.url}/oauth/token`, { method: 'POST', body: form.toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(token.status).toBe(429);
    expect(Number(token.headers.get('retry-after'))).toBeGreaterThan(0);
    const login = await f.call('POST', '/api/v1/auth/login', { json: { idToken: 'a.b.c' } });
    expect([login.status, login.body.type]).toEqual([429, '/problems/rate-limited']);
    expect(login.body.detail).toMatch(/try again later/i);
  });
});

describe('behind the ingress: TRUST_PROXY decides whose address a sign-in budget is (real HTTP, Redis)', () => {
  let trusting: ManagementApiFixture;
  let direct: ManagementApiFixture;

  beforeAll(async () => {
    trusting = await ManagementApiFixture.start({ RATE_LIMIT_IP_PER_MINUTE: '2', TRUST_PROXY: '1' });
    direct = await ManagementApiFixture.start({ RATE_LIMIT_IP_PER_MINUTE: '2' });
  });
  afterAll(async () => {
    await trusting?.stop();
    await direct?.stop();
  });

  const login = (f: ManagementApiFixture, forwardedFor: string) =>
    f.call('POST', '/api/v1/auth/login', { json: { idToken: 'a.b.c' }, headers: { 'x-forwarded-for': forwardedFor } });

  it('TRUST_PROXY=1: two clients the ingress names in X-Forwarded-For get a budget each', async () => {
    // The ingress appends the address it saw; what the client put before it is not believed.
    const first = [await login(trusting, '6.6.6.6, 203.0.113.10'), await login(trusting, '7.7.7.7, 203.0.113.10'), await login(trusting, '203.0.113.10')];
    expect(first.map((r) => r.status)).toEqual([401, 401, 429]);
    const other = await login(trusting, '203.0.113.11');
    expect([other.status, other.headers.get('ratelimit-remaining')]).toEqual([401, '1']);
  });

  it('TRUST_PROXY=0 (the default): a spoofed X-Forwarded-For does not escape the limit', async () => {
    const statuses = [];
    for (let i = 1; i <= 3; i++) statuses.push((await login(direct, `203.0.113.${i}`)).status);
    expect(statuses).toEqual([401, 401, 429]);
  });
});
