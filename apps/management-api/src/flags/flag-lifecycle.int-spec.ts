import { EvaluationRecorder } from '@flagship/flag-store';
import { ManagementApiFixture, type SignedUp } from '../testing/management-api.fixture';

/**
 * Stale flags through HTTP: the evaluate route records the evaluation (written when the recorder's
 * window closes: flushed here), writes keep since when one value is served, and the list filters.
 */
describe('stale flags (real HTTP, Postgres, Redis)', () => {
  let f: ManagementApiFixture;
  let owner: SignedUp;
  const as = (headers: Record<string, string> = {}) => ({ token: owner.idToken, tenant: owner.tenantId, headers });
  const keys = async (query: string, headers: Record<string, string> = {}) => {
    const res = await f.call('GET', `/api/flags?${query}`, as(headers));
    expect(res.status).toBe(200);
    return (res.body as Array<{ key: string }>).map((x) => x.key);
  };

  beforeAll(async () => {
    f = await ManagementApiFixture.start({ STALE_AFTER_DAYS: '30' });
    owner = await f.signUp();
  });
  afterAll(async () => {
    await f?.stop();
  });

  it('lists flags not evaluated, or serving one value, for STALE_AFTER_DAYS days, a page at a time; each flag says when it was last evaluated', async () => {
    for (const key of ['quiet', 'used', 'rolled-out', 'young']) {
      expect((await f.call('POST', '/api/flags', { ...as(), json: { key, name: key, type: 'boolean', defaultValue: false, enabled: key !== 'quiet' } })).status).toBe(201);
    }
    // used: split between two values; rolled-out, young: on, serving the default to everyone.
    const used = await f.call('GET', '/api/flags/used', as());
    const split = used.body.variations.map((v: Record<string, unknown>) => ({ ...v, weight: 50 }));
    expect((await f.call('PATCH', '/api/flags/used', { ...as({ 'if-match': used.headers.get('etag')! }), json: { variations: split } })).body.servingOneVariationSince).toBeNull();
    for (const key of ['used', 'rolled-out']) expect((await f.call('POST', `/api/flags/${key}/evaluate`, { ...as(), json: { userId: 'u1' } })).status).toBe(200);
    await f.svc.app.get(EvaluationRecorder).flush();
    // Made 40 days old, and rolled-out serving one value for 40 days (a write dates it now).
    await f.sql(`UPDATE flags SET created_at = created_at - interval '40 days' WHERE tenant_id = $1 AND key <> 'young'`, [owner.tenantId]);
    await f.sql(`UPDATE flag_environments fe SET serving_one_variation_since = serving_one_variation_since - interval '40 days' FROM flags f WHERE f.id = fe.flag_id AND f.tenant_id = $1 AND f.key = 'rolled-out'`, [owner.tenantId]);

    expect(await keys('lifecycle=stale')).toEqual(['quiet', 'rolled-out']);
    expect(await keys('lifecycle=active')).toEqual(['used', 'young']);
    expect(await keys('lifecycle=stale&staleAfterDays=45')).toEqual([]);
    // Evaluated in production only: in staging all but young are quiet.
    expect(await keys('lifecycle=stale', { 'x-environment': 'staging' })).toEqual(['quiet', 'used', 'rolled-out']);
    // Pages: the cursor runs over the filtered list.
    const first = await f.call('GET', '/api/flags?lifecycle=stale&limit=1', as());
    expect(first.body.map((x: { key: string }) => x.key)).toEqual(['quiet']);
    const next = /<([^>]+)>;\s*rel="next"/.exec(first.headers.get('link') ?? '')?.[1];
    expect(next).toBeDefined();
    const second = await f.call('GET', new URL(next!, f.url).pathname + new URL(next!, f.url).search, as());
    expect(second.body.map((x: { key: string }) => x.key)).toEqual(['rolled-out']);

    const got = await f.call('GET', '/api/flags/used', as());
    expect(Date.now() - Date.parse(got.body.lastEvaluatedAt)).toBeLessThan(60_000);
    expect((await f.call('GET', '/api/flags/quiet', as())).body).toMatchObject({ lastEvaluatedAt: null, servingOneVariationSince: expect.any(String) });
  });

  it('refuses an unknown lifecycle and days out of 1..365, naming the field', async () => {
    const bad = await f.call('GET', '/api/flags?lifecycle=old&staleAfterDays=0', as());
    expect([bad.status, Object.keys(bad.body.errors).sort()]).toEqual([422, ['lifecycle', 'staleAfterDays']]);
    expect((await f.call('GET', '/api/flags?lifecycle=stale&staleAfterDays=366', as())).status).toBe(422);
  });
});
