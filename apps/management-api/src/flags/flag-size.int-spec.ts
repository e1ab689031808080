import { FlagStore } from '@flagship/flag-store';
import { measureFlagDefinitions } from '@flagship/persistence';
import { ManagementApiFixture, type SignedUp } from '../testing/management-api.fixture';

/**
 * A flag has a size (issue 30): FLAG_MAX_BYTES per definition and QUOTA_FLAG_BYTES_PER_TENANT
 * where flags are written (create, PATCH, import, a new environment), FLAG_SET_MAX_BYTES where
 * they are held (the flag store: evaluations, the flag-data stream, export). Small bounds here;
 * real HTTP, Postgres and Redis.
 */
describe('flag sizes (real HTTP, Postgres, Redis)', () => {
  const MAX_FLAG = 4096;
  const QUOTA = 40_000;
  let f: ManagementApiFixture;
  const as = (u: SignedUp, json?: unknown) => ({ token: u.idToken, tenant: u.tenantId, json });
  /** A JSON flag whose variation holds `pad` characters: about `pad` bytes per environment. */
  const jsonFlag = (key: string, pad: number) => ({ key, name: key, type: 'json', defaultValue: {}, flag_variations: [{ name: 'big', value: { blob: 'x'.repeat(pad) } }] });
  /** LaunchDarkly's server-side data: JSON flags with one variation of `pad` characters. */
  const ld = (flags: Record<string, number>) => ({
    flags: Object.fromEntries(
      Object.entries(flags).map(([key, pad]) => [key, { key, version: 1, on: true, variations: [{ blob: 'x'.repeat(pad) }, {}], offVariation: 1, fallthrough: { variation: 0 }, salt: key }]),
    ),
  });
  const storedBytes = async (tenantId: string): Promise<number> =>
    (await f.sql<{ n: number }>('SELECT coalesce(sum(definition_bytes), 0)::float8 AS n FROM flag_environments WHERE tenant_id = $1', [tenantId])).rows[0]!.n;
  const keysOf = async (u: SignedUp): Promise<string[]> => ((await f.call('GET', '/api/flags?limit=1000', as(u))).body as Array<{ key: string }>).map((x) => x.key).sort();
  const expectQuota = (res: { status: number; body: Record<string, unknown> }, current: number) =>
    expect([res.status, res.body]).toEqual([409, expect.objectContaining({ type: '/problems/quota-exceeded', quota: 'flag-bytes-per-tenant', limit: QUOTA, current })]);

  beforeAll(async () => {
    f = await ManagementApiFixture.start({
      FLAG_MAX_BYTES: String(MAX_FLAG),
      QUOTA_FLAG_BYTES_PER_TENANT: String(QUOTA),
      FLAG_SET_MAX_BYTES: String(QUOTA),
      FLAG_STORE_MAX_BYTES: String(QUOTA * 4),
    });
  });
  afterAll(async () => {
    await f?.stop();
  });

  it('create: a definition over FLAG_MAX_BYTES is 422 naming the field; one under it is made', async () => {
    const u = await f.signUp();
    const res = await f.call('POST', '/api/flags', as(u, jsonFlag('too-big', 5000)));
    expect([res.status, res.headers.get('content-type'), res.body.type]).toEqual([422, 'application/problem+json; charset=utf-8', '/problems/validation-failed']);
    expect(res.body.errors).toEqual({
      flag_variations: expect.stringMatching(/^the flag's definition would take \d{4} bytes in development, production, staging; one environment's definition of a flag may take at most 4096 bytes$/),
    });
    expect((await f.call('GET', '/api/flags/too-big', as(u))).status).toBe(404);
    expect(await storedBytes(u.tenantId)).toBe(0);
    expect((await f.call('POST', '/api/flags', as(u, jsonFlag('fits', 3000)))).status).toBe(201);
  });

  it('PATCH: growing a definition past FLAG_MAX_BYTES is 422 naming the field; the flag stays as it was', async () => {
    const u = await f.signUp();
    const created = await f.call('POST', '/api/flags', as(u, { key: 'plain', name: 'plain', type: 'boolean', defaultValue: false }));
    const variationId = created.body.variations[0].id;
    const values = Array.from({ length: 400 }, (_, i) => `user-${String(i).padStart(6, '0')}`);
    const targets = await f.call('PATCH', '/api/flags/plain', as(u, { enabled: true, targets: [{ variationId, values }] }));
    expect([targets.status, targets.body.errors]).toEqual([422, { targets: expect.stringMatching(/ bytes in production; .* at most 4096 bytes$/) }]);
    // A global field makes every environment's definition larger: each is named.
    const variations = await f.call('PATCH', '/api/flags/plain', as(u, { variations: [...created.body.variations, { id: 'v3', name: 'x'.repeat(5000), value: true, weight: 0 }] }));
    expect([variations.status, variations.body.errors]).toEqual([422, { variations: expect.stringMatching(/ bytes in development, production, staging; /) }]);
    const now = await f.call('GET', '/api/flags/plain', as(u));
    expect([now.body.enabled, now.body.targets, now.body.variations.length, now.body.version]).toEqual([false, [], 2, created.body.version]);
    // Under the limit it is written, and the stored size follows.
    const before = await storedBytes(u.tenantId);
    expect((await f.call('PATCH', '/api/flags/plain', as(u, { targets: [{ variationId, values: values.slice(0, 100) }] }))).status).toBe(200);
    expect(await storedBytes(u.tenantId)).toBeGreaterThan(before + 1400);
  });

  it('the byte quota counts every environment; concurrent creates never pass it, and a refused one writes nothing', async () => {
    const u = await f.signUp();
    // About 3.1 KB in each of 3 environments: 4 fit in 40,000 bytes, 5 do not.
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => f.call('POST', '/api/flags', as(u, jsonFlag(`q${i}`, 3000)))));
    expect(results.map((r) => r.status).sort()).toEqual([201, 201, 201, 201, 409, 409]);
    const held = await storedBytes(u.tenantId);
    expect(held).toBeLessThanOrEqual(QUOTA);
    for (const r of results.filter((x) => x.status === 409)) expectQuota(r, held);
    expect(await keysOf(u)).toHaveLength(4);
    // Making a flag smaller frees bytes; a flag's name and description are not part of its definition.
    const q = results.find((r) => r.status === 201)!.body;
    expect((await f.call('PATCH', `/api/flags/${q.key}`, as(u, { description: 'd'.repeat(2000) }))).status).toBe(200);
    expect(await storedBytes(u.tenantId)).toBe(held);
    expect((await f.call('PATCH', `/api/flags/${q.key}`, as(u, { variations: [{ ...q.variations[0], value: { blob: 'small' } }] }))).status).toBe(200);
    expect(await storedBytes(u.tenantId)).toBeLessThan(held - 8000);
    expect((await f.call('POST', '/api/flags', as(u, jsonFlag('q-again', 3000)))).status).toBe(201);
  });

  it('a new environment copies every flag, so it counts against the byte quota too', async () => {
    const u = await f.signUp();
    for (let i = 0; i < 4; i++) expect((await f.call('POST', '/api/flags', as(u, jsonFlag(`e${i}`, 3000)))).status).toBe(201);
    const held = await storedBytes(u.tenantId);
    expectQuota(await f.call('POST', '/api/environments', as(u, { key: 'qa', name: 'QA' })), held);
    expect((await f.call('GET', '/api/environments', as(u))).body.map((e: { key: string }) => e.key)).not.toContain('qa');
    expect(await storedBytes(u.tenantId)).toBe(held);
  });

  it('import: a flag over FLAG_MAX_BYTES refuses the whole import, naming it; nothing is written', async () => {
    const u = await f.signUp();
    const res = await f.call('POST', '/api/flags/import', as(u, ld({ 'ld-small': 10, 'ld-huge': 6000, 'ld-other': 10 })));
    expect([res.status, res.body.type]).toEqual([422, '/problems/validation-failed']);
    expect(res.body.errors).toEqual({ 'flags.ld-huge': expect.stringMatching(/^the flag's definition would take \d{4} bytes in development, production, staging; .* at most 4096 bytes$/) });
    expect(await keysOf(u)).toEqual([]);
    expect(await storedBytes(u.tenantId)).toBe(0);
  });

  it('import: flags past the byte quota together refuse the whole import (409); replacing flags counts only what it adds', async () => {
    const u = await f.signUp();
    // About 2.8 KB in each of 3 environments: 4 fit, 5 do not.
    const refused = await f.call('POST', '/api/flags/import', as(u, ld({ a: 2500, b: 2500, c: 2500, d: 2500, e: 2500 })));
    expectQuota(refused, 0);
    // The refusal names what each flag of the import would add (every environment's copy).
    expect(Object.keys(refused.body.adds).sort()).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(refused.body.adds.a).toBeGreaterThan(3 * 2500);
    expect(await keysOf(u)).toEqual([]);
    const fits = await f.call('POST', '/api/flags/import', as(u, ld({ a: 2500, b: 2500, c: 2500, d: 2500 })));
    expect([fits.status, fits.body.created]).toEqual([200, ['a', 'b', 'c', 'd']]);
    const held = await storedBytes(u.tenantId);
    // The same flags again add nothing; two of them larger pass it.
    expect((await f.call('POST', '/api/flags/import', as(u, ld({ a: 2500, b: 2500 })))).status).toBe(200);
    expect(await storedBytes(u.tenantId)).toBe(held);
    expectQuota(await f.call('POST', '/api/flags/import', as(u, ld({ a: 3500, b: 3500 }))), held);
    expect(await storedBytes(u.tenantId)).toBe(held);
  });

  describe('flags stored before these bounds (written straight into Postgres)', () => {
    /** A JSON flag of `pad` characters, on in production, written as old code would have (definition_bytes left at 0). */
    const storeStraight = async (tenantId: string, key: string, pad: number) => {
      await f.sql(
        `WITH x AS (INSERT INTO flags (tenant_id, key, name, type, default_value, variations) VALUES ($1, $2, $2, 'json', '{}', $3::jsonb) RETURNING id, tenant_id)
         INSERT INTO flag_environments (tenant_id, flag_id, environment_key, enabled) SELECT tenant_id, id, 'production', true FROM x`,
        [tenantId, key, JSON.stringify([{ id: 'v', name: 'v', value: { blob: 'x'.repeat(pad) }, weight: 0 }])],
      );
    };
    const measure = (tenantId: string) => measureFlagDefinitions({ query: async (text, params) => (await f.sql(text, params)).rows }, tenantId, { environment: 'production' });
    const evaluate = (u: SignedUp, key: string) => f.call('POST', `/api/flags/${key}/evaluate`, as(u, { userId: 'u1' }));

    it('a set over FLAG_SET_MAX_BYTES is refused, not loaded: evaluations, the flag stream and export say so; the replica serves everyone else', async () => {
      const big = await f.signUp();
      const other = await f.signUp();
      expect((await f.call('POST', '/api/flags', as(other, { key: 'fine', name: 'fine', type: 'boolean', defaultValue: true, enabled: true }))).status).toBe(201);
      for (let i = 0; i < 14; i++) await storeStraight(big.tenantId, `old-${i}`, 3500); // about 50 KB in production
      await measure(big.tenantId); // the sizes the migration stores for rows written before

      const store = f.svc.app.get(FlagStore);
      const refused = await evaluate(big, 'old-0');
      expect([refused.status, refused.headers.get('content-type'), refused.body]).toEqual([
        409,
        expect.stringMatching(/^application\/problem\+json/),
        expect.objectContaining({ type: '/problems/flag-set-too-large', limit: QUOTA, bytes: expect.any(Number), detail: expect.stringMatching(/^The flags of environment production take \d+ bytes, over the 40000/) }),
      ]);
      expect(refused.body.bytes).toBeGreaterThan(QUOTA);
      expect(store.peek(big.tenantId, 'production', { stale: true })).toBeUndefined();
      expect((await f.call('GET', '/api/flag-stream', as(big))).body.type).toBe('/problems/flag-set-too-large');
      expect((await f.call('GET', '/api/flags/export', as(big))).status).toBe(409);
      expect((await evaluate(other, 'fine')).body).toMatchObject({ value: true });
      expect((await fetch(`${f.url}/healthz`)).status).toBe(200);

      // Made smaller, it is served again.
      await f.sql(`DELETE FROM flags WHERE tenant_id = $1 AND key LIKE 'old-%' AND key <> 'old-0'`, [big.tenantId]);
      const again = await evaluate(big, 'old-0');
      expect([again.status, again.body.reason]).toEqual([200, 'FALLTHROUGH']);
    });

    it('a flag over FLAG_MAX_BYTES is not evaluated (409 flag-too-large), nor streamed or exported; the rest of its set is', async () => {
      const u = await f.signUp();
      expect((await f.call('POST', '/api/flags', as(u, { key: 'small', name: 'small', type: 'boolean', defaultValue: true, enabled: true }))).status).toBe(201);
      await storeStraight(u.tenantId, 'legacy-huge', 6000);
      await measure(u.tenantId);
      const res = await evaluate(u, 'legacy-huge');
      expect([res.status, res.body.type, res.body.limit, res.body.bytes > MAX_FLAG]).toEqual([409, '/problems/flag-too-large', MAX_FLAG, true]);
      expect((await evaluate(u, 'small')).body).toMatchObject({ value: true, reason: 'FALLTHROUGH' });
      expect((await f.call('GET', '/api/flags/export', as(u))).body.flags.map((x: { key: string }) => x.key)).toEqual(['small']);
      // It may still be made smaller (or renamed, or deleted), not larger.
      const renamed = await f.call('PATCH', '/api/flags/legacy-huge', as(u, { description: 'kept for now' }));
      expect([renamed.status, renamed.body.errors]).toEqual([200, undefined]);
      const variations = [{ id: 'v', name: 'v', value: { blob: 'x'.repeat(6100) }, weight: 0 }];
      expect((await f.call('PATCH', '/api/flags/legacy-huge', as(u, { variations }))).status).toBe(422);
      expect((await f.call('PATCH', '/api/flags/legacy-huge', as(u, { variations: [{ ...variations[0], value: { blob: 'ok' } }] }))).status).toBe(200);
      expect((await evaluate(u, 'legacy-huge')).body).toMatchObject({ value: {}, reason: 'FALLTHROUGH' });
    });
  });
});
