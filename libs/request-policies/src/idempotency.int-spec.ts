import { randomUUID } from 'node:crypto';
import { Body, Controller, Headers, HttpCode, Param, Patch, Post, Put, Res } from '@nestjs/common';
import type { Response } from 'express';
import Redis from 'ioredis';
import { IsString, MaxLength } from 'class-validator';
import { CommonProblems, ProblemException } from '@flagship/problem-details';
import type { RunningApp } from '@flagship/service-kit';
import { createTestEnvironment, DisposableRedis, http, waitFor, type HttpResult, type TestEnvironment } from '@flagship/testing';
import { NoIdempotency, SecretResponse } from './idempotency.decorators';
import { sha256Hex } from './idempotency-key';
import { startProbe } from './policies-probe.fixture';

/** How many times each probe handler really ran: a replay must not move these. */
const runs: Record<string, number> = {};
const ran = (name: string): number => (runs[name] = (runs[name] ?? 0) + 1);
const count = (name: string): number => runs[name] ?? 0;

/** Holds /slow until the test releases it. */
let releaseSlow: () => void = () => undefined;
let slowGate: Promise<void> = Promise.resolve();

class NamedDto {
  @IsString()
  @MaxLength(10)
  name: string;
}

@Controller()
class IdempotentController {
  @Post('things')
  create(@Body() body: Record<string, unknown>, @Res({ passthrough: true }) res: Response): Record<string, unknown> {
    const id = ran('things');
    res.setHeader('Location', `/things/${id}`);
    res.setHeader('ETag', `"v${id}"`);
    return { id, ...body };
  }

  @Post('things-ok')
  @HttpCode(200)
  createOk(@Body() body: Record<string, unknown>): Record<string, unknown> {
    return { run: ran('things-ok'), ...body };
  }

  @Post('jobs')
  @HttpCode(202)
  enqueue(): { job: number } {
    return { job: ran('jobs') };
  }

  @Post('empty')
  @HttpCode(204)
  empty(): void {
    ran('empty');
  }

  @Patch('things/:id')
  update(@Param('id') id: string, @Body() body: Record<string, unknown>): Record<string, unknown> {
    return { id, version: ran('patch'), ...body };
  }

  @Put('things/:id')
  replace(@Param('id') id: string): Record<string, unknown> {
    return { id, version: ran('put') };
  }

  @Post('slow')
  async slow(): Promise<{ run: number }> {
    const run = ran('slow');
    await slowGate;
    return { run };
  }

  @Post('conflict')
  conflict(): never {
    throw new ProblemException(CommonProblems.conflict, `Already exists (attempt ${ran('conflict')}).`);
  }

  @Post('flaky')
  flaky(): { attempt: number } {
    const attempt = ran('flaky');
    if (attempt === 1) throw new Error('transient failure');
    return { attempt };
  }

  @Post('validated')
  validated(@Body() dto: NamedDto): NamedDto {
    ran('validated');
    return dto;
  }

  /** Like /oauth/token: public, the credentials (Basic) checked in the handler, a credential answered. */
  @Post('token')
  @HttpCode(200)
  token(@Headers('authorization') authorization: string | undefined): { access_token: string } {
    if (authorization !== `Basic ${Buffer.from('client-a:secret-a').toString('base64')}`) {
      throw new ProblemException(CommonProblems.unauthorized, 'Client authentication failed.');
    }
    return { access_token: `token-of-a-${ran('token')}-${randomUUID()}` };
  }

  /** Authenticated by the guard, yet marked: the key is ignored. */
  @Post('signin')
  @NoIdempotency()
  @HttpCode(200)
  signin(): { session: number } {
    return { session: ran('signin') };
  }

  /** Like OAuth client creation: the answer holds a secret shown once. */
  @Post('clients')
  @SecretResponse()
  createClient(@Res({ passthrough: true }) res: Response): { id: number; secret: string } {
    const id = ran('clients');
    res.setHeader('Location', `/clients/${id}`);
    return { id, secret: `ffs_${randomUUID()}` };
  }
}

const POLICIES = { limits: { free: 100_000, standard: 100_000, premium: 100_000 } };

const who = (tenantId = randomUUID(), callerId = `user:${randomUUID()}`): Record<string, string> => ({
  'x-test-tenant': tenantId,
  'x-test-caller': callerId,
});

function send(app: RunningApp, method: string, path: string, headers: Record<string, string>, json?: unknown): Promise<HttpResult> {
  return http(`${app.url}${path}`, { method, headers, ...(json === undefined ? {} : { json }) });
}

const expectProblem = (res: HttpResult, status: number, slug: string) => {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect((res.body as { type: string }).type).toBe(`/problems/${slug}`);
};

describe('Idempotency-Key through real HTTP and Redis', () => {
  let te: TestEnvironment;
  let svc: RunningApp;
  let replica: RunningApp;
  let redis: Redis;

  beforeAll(async () => {
    te = await createTestEnvironment();
    svc = await startProbe(te.env, { policies: POLICIES, controllers: [IdempotentController], trustProxy: 1 });
    replica = await startProbe(te.env, { policies: POLICIES, controllers: [IdempotentController], trustProxy: 1 });
    redis = new Redis(te.redis.url);
  });

  afterAll(async () => {
    redis?.disconnect();
    await svc?.close();
    await replica?.close();
    await te?.teardown();
  });

  it('replays the first status, body and Location without running the handler again', async () => {
    const headers = { ...who(), 'idempotency-key': randomUUID() };
    const first = await send(svc, 'POST', '/things', headers, { name: 'a' });
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const runsAfterFirst = count('things');

    const again = await send(svc, 'POST', '/things', headers, { name: 'a' });
    const elsewhere = await send(replica, 'POST', '/things', headers, { name: 'a' });
    for (const res of [again, elsewhere]) {
      expect(res.status).toBe(201);
      expect(res.headers.get('idempotent-replayed')).toBe('true');
      expect(res.body).toEqual(first.body);
      expect(res.headers.get('location')).toBe(first.headers.get('location'));
      expect(res.headers.get('etag')).toBe(first.headers.get('etag'));
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      // The retry is its own request: its own id, and rate-limit headers of its own.
      expect(res.headers.get('x-request-id')).not.toBe(first.headers.get('x-request-id'));
      expect(res.headers.get('ratelimit-limit')).toBe('100000');
    }
    expect(count('things')).toBe(runsAfterFirst);
  });

  it('keeps the answer for 24 hours, under a key scoped to tenant and caller', async () => {
    const tenantId = randomUUID();
    const callerId = `user:${randomUUID()}`;
    const key = randomUUID();
    expect((await send(svc, 'POST', '/things', { ...who(tenantId, callerId), 'idempotency-key': key }, { name: 'ttl' })).status).toBe(201);
    const ttl = await redis.pttl(`${te.redis.prefix}t:${tenantId}:idem:${callerId}:${sha256Hex(key)}`);
    expect(ttl).toBeGreaterThan(23.9 * 3600 * 1000);
    expect(ttl).toBeLessThanOrEqual(24 * 3600 * 1000);
  });

  it('treats bodies differing only in key order as the same request', async () => {
    const headers = { ...who(), 'idempotency-key': randomUUID() };
    const first = await send(svc, 'POST', '/things', headers, { a: 1, b: { c: 2, d: [1, 2] } });
    const before = count('things');
    const again = await send(svc, 'POST', '/things', headers, { b: { d: [1, 2], c: 2 }, a: 1 });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(count('things')).toBe(before);
  });

  it('answers 422 for the same key with another body or path, running nothing', async () => {
    const headers = { ...who(), 'idempotency-key': randomUUID() };
    expect((await send(svc, 'POST', '/things', headers, { name: 'a' })).status).toBe(201);
    const before = { things: count('things'), ok: count('things-ok') };
    const otherBody = await send(svc, 'POST', '/things', headers, { name: 'b' });
    expectProblem(otherBody, 422, 'idempotency-key-reused');
    const otherPath = await send(svc, 'POST', '/things-ok', headers, { name: 'a' });
    expectProblem(otherPath, 422, 'idempotency-key-reused');
    expect({ things: count('things'), ok: count('things-ok') }).toEqual(before);
  });

  it('replays the status a handler chose with @HttpCode (200, 202, 204)', async () => {
    const base = who();
    for (const [path, status] of [['/things-ok', 200], ['/jobs', 202], ['/empty', 204]] as const) {
      const headers = { ...base, 'idempotency-key': randomUUID() };
      const name = path.slice(1);
      const first = await send(svc, 'POST', path, headers, {});
      expect(first.status).toBe(status);
      const before = count(name);
      const again = await send(svc, 'POST', path, headers, {});
      expect(again.status).toBe(status);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.text).toBe(first.text);
      expect(count(name)).toBe(before);
    }
  });

  it('answers 409 with Retry-After while the first request is in flight, on any replica', async () => {
    slowGate = new Promise<void>((resolve) => (releaseSlow = resolve));
    const headers = { ...who(), 'idempotency-key': randomUUID() };
    const before = count('slow');
    const first = send(svc, 'POST', '/slow', headers, {});
    await waitFor(async () => count('slow') === before + 1);

    for (const app of [svc, replica]) {
      const busy = await send(app, 'POST', '/slow', headers, {});
      expectProblem(busy, 409, 'idempotency-in-flight');
      expect(busy.headers.get('retry-after')).toBe('1');
    }
    // A different body is a misuse even while the first runs.
    expectProblem(await send(replica, 'POST', '/slow', headers, { other: true }), 422, 'idempotency-key-reused');

    releaseSlow();
    const done = await first;
    expect(done.status).toBe(201);
    expect(done.body).toEqual({ run: before + 1 });
    const replayed = await send(replica, 'POST', '/slow', headers, {});
    expect(replayed.status).toBe(201);
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expect(replayed.body).toEqual({ run: before + 1 });
    expect(count('slow')).toBe(before + 1);
  });

  it('scopes keys to tenant and caller: the same key elsewhere runs afresh', async () => {
    const key = randomUUID();
    const tenantId = randomUUID();
    const base = who(tenantId);
    const first = await send(svc, 'POST', '/things', { ...base, 'idempotency-key': key }, { name: 'x' });
    const otherTenant = await send(svc, 'POST', '/things', { ...who(), 'x-test-caller': base['x-test-caller'], 'idempotency-key': key }, { name: 'x' });
    const otherCaller = await send(svc, 'POST', '/things', { ...who(tenantId), 'idempotency-key': key }, { name: 'x' });
    for (const res of [otherTenant, otherCaller]) {
      expect(res.status).toBe(201);
      expect(res.headers.get('idempotent-replayed')).toBeNull();
      expect((res.body as { id: number }).id).not.toBe((first.body as { id: number }).id);
    }
  });

  it('ignores the key on unauthenticated requests: nothing is stored that another address or caller could get', async () => {
    const key = randomUUID();
    const from = (address: string) => send(svc, 'POST', '/things', { 'x-forwarded-for': address, 'idempotency-key': key }, { name: 'anon' });
    const first = await from('203.0.113.10');
    const same = await from('203.0.113.10');
    expect(same.headers.get('idempotent-replayed')).toBeNull();
    expect(same.body).not.toEqual(first.body);
    expect(await redis.keys(`${te.redis.prefix}*idem*`)).not.toContainEqual(expect.stringContaining(sha256Hex(key)));
  });

  it('never replays a token answer to a request with wrong or no credentials (the /oauth/token replay)', async () => {
    const key = randomUUID();
    const basic = (user: string, pass: string) => `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
    const form = { grant_type: 'client_credentials' };
    const victim = await send(svc, 'POST', '/token', { authorization: basic('client-a', 'secret-a'), 'idempotency-key': key }, form);
    expect(victim.status).toBe(200);
    const token = (victim.body as { access_token: string }).access_token;
    for (const headers of [{ authorization: basic('client-a', 'wrong') }, { authorization: basic('attacker', 'x') }, {}] as Record<string, string>[]) {
      for (const app of [svc, replica]) {
        const attack = await send(app, 'POST', '/token', { ...headers, 'idempotency-key': key }, form);
        expectProblem(attack, 401, 'unauthorized');
        expect(attack.text).not.toContain(token);
        expect(attack.headers.get('idempotent-replayed')).toBeNull();
      }
    }
    // The legitimate retry gets a token of its own (the route is not cached), not the first one.
    const retry = await send(svc, 'POST', '/token', { authorization: basic('client-a', 'secret-a'), 'idempotency-key': key }, form);
    expect(retry.status).toBe(200);
    expect((retry.body as { access_token: string }).access_token).not.toBe(token);
    const stored = await redis.keys(`${te.redis.prefix}*`);
    for (const k of stored) {
      if ((await redis.type(k)) === 'string') expect(await redis.get(k)).not.toContain(token);
    }
  });

  it('ignores the key on a @NoIdempotency route even for an authenticated caller', async () => {
    const headers = { ...who(), 'idempotency-key': randomUUID() };
    const first = await send(svc, 'POST', '/signin', headers, {});
    const again = await send(svc, 'POST', '/signin', headers, {});
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    expect((again.body as { session: number }).session).toBe((first.body as { session: number }).session + 1);
  });

  it('never stores an answer holding a secret; a retry is told the request succeeded and gets no secret, nothing runs twice', async () => {
    const tenantId = randomUUID();
    const headers = { ...who(tenantId), 'idempotency-key': randomUUID() };
    const created = await send(svc, 'POST', '/clients', headers, {});
    expect(created.status).toBe(201);
    const secret = (created.body as { secret: string }).secret;
    const before = count('clients');
    const stored = await redis.keys(`${te.redis.prefix}*`);
    expect(stored.length).toBeGreaterThan(0);
    for (const k of stored) {
      if ((await redis.type(k)) === 'string') expect(await redis.get(k)).not.toContain(secret);
    }
    for (const app of [svc, replica]) {
      const retry = await send(app, 'POST', '/clients', headers, {});
      expectProblem(retry, 409, 'idempotent-response-not-replayable');
      expect(retry.text).not.toContain(secret);
      expect(retry.headers.get('location')).toBe(created.headers.get('location'));
      expect(retry.headers.get('idempotent-replayed')).toBe('true');
      expect(retry.body).toMatchObject({ originalStatus: 201, location: created.headers.get('location') });
    }
    expect(count('clients')).toBe(before);
  });

  it('treats another X-Environment, If-Match or X-Tenant-ID under the same key as another request (422), not a replay', async () => {
    const base = { ...who(), 'idempotency-key': randomUUID() };
    const first = await send(svc, 'PATCH', '/things/9', { ...base, 'x-environment': 'production', 'if-match': '"1.1"', 'x-tenant-id': 'a' }, { on: true });
    expect(first.status).toBe(200);
    const before = count('patch');
    expectProblem(await send(svc, 'PATCH', '/things/9', { ...base, 'x-environment': 'staging', 'if-match': '"1.1"', 'x-tenant-id': 'a' }, { on: true }), 422, 'idempotency-key-reused');
    expectProblem(await send(svc, 'PATCH', '/things/9', { ...base, 'x-environment': 'production', 'x-tenant-id': 'a' }, { on: true }), 422, 'idempotency-key-reused');
    expectProblem(await send(svc, 'PATCH', '/things/9', { ...base, 'x-environment': 'production', 'if-match': '"1.1"', 'x-tenant-id': 'b' }, { on: true }), 422, 'idempotency-key-reused');
    const same = await send(svc, 'PATCH', '/things/9', { ...base, 'x-environment': 'production', 'if-match': '"1.1"', 'x-tenant-id': 'a', 'x-request-id': 'another' }, { on: true });
    expect(same.headers.get('idempotent-replayed')).toBe('true');
    expect(count('patch')).toBe(before);
  });

  it('stores and replays a 4xx answer, from the handler or from validation', async () => {
    const headers = { ...who(), 'idempotency-key': randomUUID() };
    const first = await send(svc, 'POST', '/conflict', headers, {});
    expectProblem(first, 409, 'conflict');
    const before = count('conflict');
    const again = await send(svc, 'POST', '/conflict', headers, {});
    expectProblem(again, 409, 'conflict');
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(count('conflict')).toBe(before);

    const invalid = { ...who(), 'idempotency-key': randomUUID() };
    const refused = await send(svc, 'POST', '/validated', invalid, { name: 'far too long a name' });
    expectProblem(refused, 422, 'validation-failed');
    const replayed = await send(svc, 'POST', '/validated', invalid, { name: 'far too long a name' });
    expectProblem(replayed, 422, 'validation-failed');
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expect((replayed.body as { errors: unknown }).errors).toEqual((refused.body as { errors: unknown }).errors);
    expect(count('validated')).toBe(0);
  });

  it('does not store a 5xx: the retry runs, and its success is what is replayed', async () => {
    const headers = { ...who(), 'idempotency-key': randomUUID() };
    const failed = await send(svc, 'POST', '/flaky', headers, {});
    expectProblem(failed, 500, 'internal-error');
    const retried = await send(svc, 'POST', '/flaky', headers, {});
    expect(retried.status).toBe(201);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    expect(retried.body).toEqual({ attempt: 2 });
    const replayed = await send(svc, 'POST', '/flaky', headers, {});
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expect(replayed.body).toEqual({ attempt: 2 });
    expect(count('flaky')).toBe(2);
  });

  it('refuses an invalid key with 400 before running anything', async () => {
    const before = count('things');
    for (const key of ['', 'k'.repeat(256), 'clé']) {
      const res = await send(svc, 'POST', '/things', { ...who(), 'idempotency-key': key }, { name: 'a' });
      expectProblem(res, 400, 'idempotency-key-invalid');
    }
    expect((await send(svc, 'POST', '/things', { ...who(), 'idempotency-key': 'k'.repeat(255) }, { name: 'a' })).status).toBe(201);
    expect(count('things')).toBe(before + 1);
  });

  it('applies to PATCH', async () => {
    const headers = { ...who(), 'idempotency-key': randomUUID() };
    const first = await send(svc, 'PATCH', '/things/7', headers, { name: 'renamed' });
    expect(first.status).toBe(200);
    const before = count('patch');
    const again = await send(svc, 'PATCH', '/things/7', headers, { name: 'renamed' });
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(count('patch')).toBe(before);
    expectProblem(await send(svc, 'PATCH', '/things/8', headers, { name: 'renamed' }), 422, 'idempotency-key-reused');
  });

  it('has no effect without the header, nor on other methods', async () => {
    const base = who();
    const before = { things: count('things'), put: count('put') };
    const a = await send(svc, 'POST', '/things', base, { name: 'same' });
    const b = await send(svc, 'POST', '/things', base, { name: 'same' });
    expect(b.body).not.toEqual(a.body);
    const putHeaders = { ...base, 'idempotency-key': randomUUID() };
    await send(svc, 'PUT', '/things/1', putHeaders);
    const put = await send(svc, 'PUT', '/things/1', putHeaders);
    expect(put.headers.get('idempotent-replayed')).toBeNull();
    expect({ things: count('things'), put: count('put') }).toEqual({ things: before.things + 2, put: before.put + 2 });
  });
});

describe('Idempotency-Key with a short in-flight TTL', () => {
  let te: TestEnvironment;
  let svc: RunningApp;

  beforeAll(async () => {
    te = await createTestEnvironment();
    svc = await startProbe(te.env, { policies: { ...POLICIES, idempotencyInFlightTtlMs: 300 }, controllers: [IdempotentController] });
  });

  afterAll(async () => {
    await svc?.close();
    await te?.teardown();
  });

  it('renews the claim while the handler runs, so a slow request is never run twice', async () => {
    slowGate = new Promise<void>((resolve) => (releaseSlow = resolve));
    const headers = { ...who(), 'idempotency-key': randomUUID() };
    const before = count('slow');
    const first = send(svc, 'POST', '/slow', headers, {});
    // On CI's loaded cores this wait once ran out (10 s): wait longer, and if the first request was
    // answered without reaching its handler, say with what instead of timing out.
    let answeredEarly: number | undefined;
    void first.then((r) => (answeredEarly = r.status));
    await waitFor(async () => count('slow') === before + 1 || answeredEarly !== undefined, 30000);
    expect({ answeredEarly, handled: count('slow') - before }).toEqual({ answeredEarly: undefined, handled: 1 });
    // Three TTLs later the claim would have lapsed without renewal.
    await new Promise((r) => setTimeout(r, 900));
    expectProblem(await send(svc, 'POST', '/slow', headers, {}), 409, 'idempotency-in-flight');
    releaseSlow();
    expect((await first).status).toBe(201);
    expect(count('slow')).toBe(before + 1);
  }, 60000);
});

describe('Idempotency-Key while Redis is down', () => {
  let te: TestEnvironment;
  let redis: DisposableRedis;
  let svc: RunningApp;

  beforeAll(async () => {
    redis = await DisposableRedis.start();
    te = await createTestEnvironment({ REDIS_URL: redis.url });
    svc = await startProbe(te.env, { policies: POLICIES, controllers: [IdempotentController] });
  });

  afterAll(async () => {
    await svc?.close();
    await redis?.stop();
    await te?.teardown();
  });

  it('refuses requests carrying a key with 503 rather than risk running them twice; others are served', async () => {
    await redis.stop();
    const before = count('things');
    const keyed = await send(svc, 'POST', '/things', { ...who(), 'idempotency-key': randomUUID() }, { name: 'a' });
    expectProblem(keyed, 503, 'idempotency-unavailable');
    expect(keyed.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    expect(count('things')).toBe(before);
    const plain = await send(svc, 'POST', '/things', who(), { name: 'a' });
    expect(plain.status).toBe(201);
    expect(count('things')).toBe(before + 1);

    await redis.start();
    const headers = { ...who(), 'idempotency-key': randomUUID() };
    const back = await waitFor(async () => {
      const res = await send(svc, 'POST', '/things', headers, { name: 'b' });
      return res.status === 201 ? res : undefined;
    }, 10000);
    const replayed = await send(svc, 'POST', '/things', headers, { name: 'b' });
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expect(replayed.body).toEqual(back.body);
  });

  it('takes back a claim Redis stored after the request had given up on it, so a retry runs instead of 409 until the TTL', async () => {
    // Writes wait 1.5 s: the claim's SET goes out, the request gives up after 500 ms (503), and
    // Redis stores the claim a second later, with the in-flight TTL (60 s) and nothing running under it.
    const admin = new Redis(redis.url);
    try {
      const headers = { ...who(), 'idempotency-key': randomUUID() };
      const before = count('things');
      await admin.call('CLIENT', 'PAUSE', '1500', 'WRITE');
      const first = await send(svc, 'POST', '/things', headers, { name: 'late' });
      expectProblem(first, 503, 'idempotency-unavailable');
      expect(count('things')).toBe(before);
      // The retries a client makes: 409s while the stored claim stands, then the request runs once.
      const statuses: number[] = [];
      const ran = await waitFor(async () => {
        const res = await send(svc, 'POST', '/things', headers, { name: 'late' });
        statuses.push(res.status);
        return res.status === 201 ? res : undefined;
        // Well within the claim's 60 s TTL, which is what this tells apart; 5 s ran out twice on loaded cores.
      }, 15000, 100);
      expect(ran.status).toBe(201);
      expect(count('things')).toBe(before + 1);
      expect(statuses.every((st) => st === 503 || st === 409 || st === 201)).toBe(true);
    } finally {
      admin.disconnect();
    }
  });
});
