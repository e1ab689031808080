import { Body, Controller, Get, HttpCode, Module, Post, type DynamicModule } from '@nestjs/common';
import { IsInt, IsString, MaxLength, Min } from 'class-validator';
import { Consumes } from '@flagship/problem-details';
import { loadConfig, commonEnv, portEnv } from '@flagship/config';
import {
  createTestEnvironment,
  DisposableRedis,
  http,
  waitFor,
  type TestEnvironment,
} from '@flagship/testing';
import { platformModules } from './platform';
import { startTestApp, type RunningApp } from '@flagship/service-kit';

class CreateThingDto {
  @IsString()
  @MaxLength(20)
  name: string;

  @IsInt()
  @Min(0)
  count: number;
}

@Controller()
class ProbeController {
  @Post('things')
  create(@Body() dto: CreateThingDto): CreateThingDto {
    return dto;
  }

  @Post('form')
  @HttpCode(200)
  @Consumes('application/x-www-form-urlencoded')
  form(@Body() body: Record<string, string>): Record<string, string> {
    return body;
  }

  @Get('boom')
  boom(): never {
    throw new Error('database password is hunter2');
  }
}

function probeModule(env: NodeJS.ProcessEnv): DynamicModule {
  const config = loadConfig(env, { ...commonEnv, ...portEnv(0) });
  @Module({ controllers: [ProbeController] })
  class ProbeModule {}
  return { module: ProbeModule, imports: platformModules(config, { serviceName: 'probe' }) };
}

describe('service kit through real HTTP', () => {
  let te: TestEnvironment;
  let redis: DisposableRedis;
  let svc: RunningApp;

  beforeAll(async () => {
    redis = await DisposableRedis.start();
    te = await createTestEnvironment({ REDIS_URL: redis.url });
    svc = await startTestApp(probeModule(te.env));
  });

  afterAll(async () => {
    await svc?.close();
    await redis?.stop();
    await te?.teardown();
  });

  const expectProblem = (res: { status: number; headers: Headers; body: any }, status: number, slug: string) => {
    expect(res.status).toBe(status);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({ type: `/problems/${slug}`, status, title: expect.any(String), detail: expect.any(String) });
    expect(res.body.instance).toBe(res.headers.get('x-request-id'));
  };

  it('answers a valid body', async () => {
    const res = await http(`${svc.url}/things`, { method: 'POST', json: { name: 'a', count: 2 } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ name: 'a', count: 2 });
  });

  it("always makes its own request id; a caller's sane x-request-id is kept beside it (x-client-request-id), never instead", async () => {
    const sent = await http(`${svc.url}/healthz`, { headers: { 'x-request-id': 'abc-123' } });
    expect(sent.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(sent.headers.get('x-client-request-id')).toBe('abc-123');
    // Two requests naming one id stay two requests.
    const again = await http(`${svc.url}/healthz`, { headers: { 'x-request-id': 'abc-123' } });
    expect(again.headers.get('x-request-id')).not.toBe(sent.headers.get('x-request-id'));
    const insane = await http(`${svc.url}/healthz`, { headers: { 'x-request-id': 'bad id with spaces' } });
    expect([insane.headers.get('x-request-id'), insane.headers.get('x-client-request-id')]).toEqual([expect.stringMatching(/^[0-9a-f-]{36}$/), null]);
    const problem = await http(`${svc.url}/no/such/route`, { headers: { 'x-request-id': 'abc-123' } });
    expect([problem.body.instance, problem.headers.get('x-client-request-id')]).toEqual([problem.headers.get('x-request-id'), 'abc-123']);
    expect(problem.body.instance).not.toBe('abc-123');
  });

  it('400 for malformed JSON', async () => {
    const res = await http(`${svc.url}/things`, { method: 'POST', body: '{"name": ', headers: { 'content-type': 'application/json' } });
    expectProblem(res, 400, 'malformed-json');
  });

  it('404 for an unknown route', async () => {
    const res = await http(`${svc.url}/no/such/route`);
    expectProblem(res, 404, 'not-found');
    expect(res.body.detail).toContain('/no/such/route');
  });

  it('413 for a body over 1 MiB', async () => {
    const res = await http(`${svc.url}/things`, { method: 'POST', json: { name: 'x'.repeat(1024 * 1024 + 10), count: 1 } });
    expectProblem(res, 413, 'payload-too-large');
  });

  it('415 for another content type, naming what is accepted', async () => {
    const res = await http(`${svc.url}/things`, { method: 'POST', body: 'name=a', headers: { 'content-type': 'text/plain' } });
    expectProblem(res, 415, 'unsupported-media-type');
    expect(res.headers.get('accept')).toBe('application/json');
    const form = await http(`${svc.url}/form`, { method: 'POST', json: { a: 1 } });
    expectProblem(form, 415, 'unsupported-media-type');
    const ok = await http(`${svc.url}/form`, { method: 'POST', body: 'a=1', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ a: '1' });
  });

  it('422 with errors per field for wrong types, missing and unknown fields', async () => {
    const res = await http(`${svc.url}/things`, { method: 'POST', json: { name: 5, extra: true } });
    expectProblem(res, 422, 'validation-failed');
    expect(Object.keys(res.body.errors).sort()).toEqual(['count', 'extra', 'name']);
    expect(res.body.errors.name).toMatch(/string/);
    expect(res.body.errors.extra).toBe('is not an allowed field');
  });

  it('422 for a body that is not an object', async () => {
    const res = await http(`${svc.url}/things`, { method: 'POST', json: [1, 2] });
    expectProblem(res, 422, 'validation-failed');
    expect(res.body.errors).toEqual({ body: 'must be a JSON object' });
  });

  it('500 tells nothing of the error', async () => {
    const res = await http(`${svc.url}/boom`);
    expectProblem(res, 500, 'internal-error');
    expect(res.text).not.toContain('hunter2');
    expect(res.text).not.toContain('at ');
  });

  it('serves /metrics on the internal port only: the public port answers 404, and the internal one nothing else', async () => {
    expect(svc.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(svc.metricsUrl).not.toBe(svc.url);
    expectProblem(await http(`${svc.url}/metrics`), 404, 'not-found');
    const prometheus = await http<string>(`${svc.metricsUrl}/metrics`);
    expect([prometheus.status, prometheus.headers.get('content-type')]).toEqual([200, expect.stringMatching(/^text\/plain/)]);
    expect(prometheus.body).toMatch(/^# HELP http_requests_total /m);
    expect((await http(`${svc.metricsUrl}/things`, { method: 'POST', json: { name: 'a', count: 1 } })).status).toBe(404);
    expect((await http(`${svc.metricsUrl}/boom`)).status).toBe(404);
  });

  it('counts requests by route template in /metrics', async () => {
    await http(`${svc.url}/things`, { method: 'POST', json: { name: 'm', count: 1 } });
    const res = await http<string>(`${svc.metricsUrl}/metrics`);
    expect(res.status).toBe(200);
    expect(res.body).toMatch(/http_requests_total\{method="POST",route="\/things",status="201",service="probe"\} \d+/);
    expect(res.body).toMatch(/http_request_duration_seconds_bucket\{le="0.005",service="probe",method="POST",route="\/things",status="201"\}/);
    expect(res.body).toMatch(/http_requests_total\{method="GET",route="\(unmatched\)",status="404",service="probe"\}/);
  });

  it('readiness follows Redis down and back up without a restart; the public port tells the status alone', async () => {
    expect((await http(`${svc.url}/readyz`)).body).toEqual({ status: 'ok' });
    expect((await http(`${svc.metricsUrl}/readyz`)).body).toMatchObject({ status: 'ok', details: { postgres: { status: 'up' }, redis: { status: 'up' } } });
    await redis.stop();
    const down = await waitFor(async () => {
      const r = await http(`${svc.metricsUrl}/readyz`);
      return r.status === 503 ? r : undefined;
    });
    expectProblem(down, 503, 'not-ready');
    expect(down.body.detail).toMatch(/redis/);
    expect(down.body.detail).not.toMatch(/postgres/);
    const publicDown = await http(`${svc.url}/readyz`);
    expectProblem(publicDown, 503, 'not-ready');
    expect(publicDown.body).not.toHaveProperty('checks');
    expect(publicDown.text).not.toMatch(/redis|postgres|127\.0\.0\.1/);
    expect((await http(`${svc.url}/healthz`)).status).toBe(200);
    await redis.start();
    await waitFor(async () => (await http(`${svc.url}/readyz`)).status === 200, 10000);
  });
});
