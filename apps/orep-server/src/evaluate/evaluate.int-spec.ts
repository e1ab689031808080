import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type RunningApp, startTestApp } from '@flagship/service-kit';
import { http } from '@flagship/testing';
import exampleFlags from '../../flags.example.json';
import { AppModule } from '../app.module';
import { loadOrepServerConfig } from '../env.schema';
import { installFastPath } from '../fast-path/install-fast-path';

/** The seed's POST /v1/flags/{flagKey}/evaluate, over real HTTP, serving flags.example.json from a file. */

const TOKEN = 'seed-test-token';

describe('POST /v1/flags/{flagKey}/evaluate', () => {
  let dir: string;
  let svc: RunningApp;
  const evaluate = (key: string, body: unknown, headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` }) =>
    http(`${svc.url}/v1/flags/${key}/evaluate`, { method: 'POST', json: body, headers });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'orep-seed-'));
    const file = join(dir, 'flags.json');
    writeFileSync(file, JSON.stringify(exampleFlags));
    const config = loadOrepServerConfig({
      ...process.env,
      NODE_ENV: 'test',
      LOG_LEVEL: process.env['TEST_LOG_LEVEL'] ?? 'silent',
      OREP_AUTH_TOKEN: TOKEN,
      OREP_FLAGS_FILE: file,
    });
    svc = await startTestApp(AppModule.forConfig(config), installFastPath);
  });

  afterAll(async () => {
    await svc?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers {key, value, enabled, reason, variant, ruleId} for each flag type', async () => {
    const staff = await evaluate('new-checkout', { defaultValue: false, type: 'boolean', context: { targetingKey: 'u1', email: 'ann@example.com' } });
    expect(staff.status).toBe(200);
    expect(staff.headers.get('content-type')).toBe('application/json');
    expect(staff.body).toEqual({ key: 'new-checkout', value: true, enabled: true, reason: 'RULE_MATCH', variant: 'on', ruleId: 'staff' });

    const target = await evaluate('new-checkout', { defaultValue: false, type: 'boolean', context: { targetingKey: 'user-qa-1' } });
    expect(target.body).toEqual({ key: 'new-checkout', value: true, enabled: true, reason: 'TARGET_MATCH', variant: 'on' });

    const french = await evaluate('welcome-banner', { defaultValue: 'hi', type: 'string', context: { targetingKey: 'u1', locale: 'fr-CA' } });
    expect(french.body).toMatchObject({ value: 'Bienvenue !', reason: 'RULE_MATCH', variant: 'french', ruleId: 'french-speakers' });

    const vip = await evaluate('max-upload-mb', { defaultValue: 1, type: 'number', context: { targetingKey: 'user-vip' } });
    expect(vip.body).toMatchObject({ value: 1000, reason: 'TARGET_MATCH', variant: 'huge' });

    const fallthrough = await evaluate('max-upload-mb', { defaultValue: 1, type: 'number', context: { targetingKey: 'u2', plan: 'free' } });
    expect(fallthrough.body).toEqual({ key: 'max-upload-mb', value: 10, enabled: true, reason: 'FALLTHROUGH', variant: null });

    const limits = await evaluate('feature-limits', { defaultValue: {}, type: 'json', context: { targetingKey: 'u3', email: 'x@bigcorp.io' } });
    expect(limits.body).toMatchObject({ value: { projects: 1000, seats: 1000 }, reason: 'RULE_MATCH', variant: 'unlimited' });
    const asObject = await evaluate('feature-limits', { defaultValue: {}, type: 'object', context: { targetingKey: 'u3' } });
    expect(asObject.body).toMatchObject({ value: { projects: 3, seats: 5 }, reason: 'FALLTHROUGH' });
  });

  it('off and prerequisite-failed flags say so', async () => {
    const off = await evaluate('dark-mode', { defaultValue: true, type: 'boolean', context: { targetingKey: 'u1' } });
    expect(off.body).toEqual({ key: 'dark-mode', value: false, enabled: false, reason: 'OFF', variant: 'off' });
    const prerequisite = await evaluate('beta-dashboard', { defaultValue: true, type: 'boolean', context: { targetingKey: 'u1', appVersion: '3.0.0' } });
    expect(prerequisite.body).toMatchObject({ value: false, enabled: true, reason: 'PREREQUISITE_FAILED' });
    const passes = await evaluate('beta-dashboard', { defaultValue: false, type: 'boolean', context: { targetingKey: 'user-qa-1', appVersion: '3.0.0' } });
    expect(passes.body).toMatchObject({ value: true, reason: 'RULE_MATCH', ruleId: 'modern-clients' });
  });

  it('a missing flag and a type mismatch answer 200 with the caller default and an error code', async () => {
    const missing = await evaluate('no-such-flag', { defaultValue: 'fallback', type: 'string', context: { targetingKey: 'u1' } });
    expect(missing.status).toBe(200);
    expect(missing.body).toEqual({
      key: 'no-such-flag',
      value: 'fallback',
      enabled: false,
      reason: 'ERROR',
      variant: null,
      errorCode: 'FLAG_NOT_FOUND',
      errorDetails: expect.any(String),
    });
    const mismatch = await evaluate('new-checkout', { defaultValue: 'fallback', type: 'string', context: { targetingKey: 'u1' } });
    expect(mismatch.status).toBe(200);
    expect(mismatch.body).toMatchObject({ key: 'new-checkout', value: 'fallback', reason: 'ERROR', errorCode: 'TYPE_MISMATCH' });
    expect(mismatch.body.errorDetails).toContain('boolean');
    const noKey = await evaluate('new-checkout', { defaultValue: true, type: 'boolean', context: { email: 'ann@example.com' } });
    expect(noKey.body).toMatchObject({ value: true, reason: 'ERROR', errorCode: 'TARGETING_KEY_MISSING' });
  });

  it.each([
    ['not JSON', '{"type": ', 'malformed-json', undefined],
    ['nested 10,000 levels deep (array)', `{"type": "json", "defaultValue": ${'['.repeat(10000)}${']'.repeat(10000)}, "context": {}}`, 'json-too-deep', undefined],
    ['nested 10,000 levels deep (object)', `{"type": "json", "defaultValue": {}, "context": {"a": ${'{"a":'.repeat(10000)}1${'}'.repeat(10000)}}}`, 'json-too-deep', undefined],
    ['nested 10,000 levels deep at the top', `${'['.repeat(10000)}${']'.repeat(10000)}`, 'json-too-deep', undefined],
    ['not an object', '[]', 'bad-request', { body: 'must be a JSON object' }],
    ['empty', '', 'bad-request', undefined],
    ['fields missing or wrong', '{"type": "bool", "extra": 1}', 'bad-request', { type: expect.any(String), defaultValue: 'is required', context: 'is required', extra: 'is not an allowed field' }],
    ['default of another type', '{"type": "number", "defaultValue": "1", "context": {}}', 'bad-request', { defaultValue: 'must be a value of type number' }],
    ['context not an object', '{"type": "string", "defaultValue": "a", "context": ["u"]}', 'bad-request', { context: 'must be a JSON object' }],
  ])('400 problem for a body %s', async (_name, body, slug, errors) => {
    const res = await http(`${svc.url}/v1/flags/new-checkout/evaluate`, {
      method: 'POST',
      body,
      headers: { authorization: `Bearer ${TOKEN}`, ...(body === '' ? {} : { 'content-type': 'application/json' }) },
    });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(res.body).toMatchObject({ type: `/problems/${slug}`, status: 400, instance: res.headers.get('x-request-id') });
    if (errors) expect(res.body.errors).toEqual(errors);
    else expect(res.body.errors).toBeUndefined();
  });

  it('401 problem without the token or with a wrong one', async () => {
    const body = { defaultValue: false, type: 'boolean', context: { targetingKey: 'u1' } };
    const attempts: Array<Record<string, string>> = [{}, { authorization: 'Bearer not-the-token' }, { authorization: `Bearer ${TOKEN}${TOKEN}` }];
    for (const headers of attempts) {
      const res = await evaluate('new-checkout', body, headers);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
      expect(res.body).toMatchObject({ type: '/problems/unauthorized', status: 401 });
    }
  });

  it('415 and 413 as problems', async () => {
    const form = await http(`${svc.url}/v1/flags/new-checkout/evaluate`, {
      method: 'POST',
      body: 'type=boolean',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(form.status).toBe(415);
    expect(form.headers.get('accept')).toBe('application/json');
    const big = await evaluate('new-checkout', { defaultValue: false, type: 'boolean', context: { targetingKey: 'u1', pad: 'x'.repeat(1024 * 1024) } });
    expect(big.status).toBe(413);
  });
});
