import { Controller, HttpCode, Module, Post, Req, type DynamicModule } from '@nestjs/common';
import type { Request } from 'express';
import { commonEnv, loadConfig, portEnv } from '@flagship/config';
import { createTestEnvironment, http, type TestEnvironment } from '@flagship/testing';
import { bootstrapService } from '@flagship/service-kit';
import { platformModules } from './platform';

@Controller()
class BodyProbeController {
  @Post('hooks/raw')
  @HttpCode(200)
  raw(@Req() req: Request) {
    const body: unknown = req.body;
    return { isBuffer: Buffer.isBuffer(body), text: Buffer.isBuffer(body) ? body.toString('utf8') : null };
  }

  @Post('json')
  @HttpCode(200)
  json(@Req() req: Request) {
    return { isBuffer: Buffer.isBuffer(req.body), body: req.body as unknown };
  }
}

/** `rawBodyPaths`: the listed route gets the exact bytes; every other route is parsed as before. */
describe('service-kit rawBodyPaths', () => {
  let te: TestEnvironment;
  let url: string;
  let close: () => Promise<void>;

  beforeAll(async () => {
    te = await createTestEnvironment();
    const config = loadConfig(te.env, { ...commonEnv, ...portEnv(0) });
    @Module({ controllers: [BodyProbeController] })
    class ProbeModule {}
    const module: DynamicModule = { module: ProbeModule, imports: platformModules(config, { serviceName: 'probe' }) };
    const app = await bootstrapService(module, { port: 0, host: '127.0.0.1', handleSignals: false, rawBodyPaths: ['/hooks/raw'] });
    url = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
    close = () => app.close();
  });

  afterAll(async () => {
    await close?.();
    await te?.teardown();
  });

  it('hands the listed route the bytes exactly as sent, whitespace and key order included', async () => {
    const sent = '{ "b": 1,\n  "a": [2, 3] }';
    const res = await http(`${url}/hooks/raw`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: sent });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ isBuffer: true, text: sent });
  });

  it('leaves other routes parsed as JSON, and malformed JSON there still a 400 problem', async () => {
    const ok = await http(`${url}/json`, { method: 'POST', json: { a: 1 } });
    expect(ok.body).toEqual({ isBuffer: false, body: { a: 1 } });
    const bad = await http(`${url}/json`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{nope' });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('content-type')).toMatch(/problem\+json/);
  });

  it('refuses a raw body over 1 MiB with a 413 problem', async () => {
    const res = await http(`${url}/hooks/raw`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: 'x'.repeat(1024 * 1024 + 1) });
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ type: '/problems/payload-too-large' });
  });
});
