import Redis from 'ioredis';
import { waitFor } from '@flagship/testing';
import { FlagStreamClient } from '../testing/flag-stream.fixture';
import { ManagementApiFixture, type SignedUp } from '../testing/management-api.fixture';

/** Bounds low enough to reach in a test; each has a case below that fails without it. */
const QUOTA = 4;
const MAX_KEYS = 50;

describe('segments (real HTTP, Postgres, Redis)', () => {
  let f: ManagementApiFixture;
  let owner: SignedUp;
  let stranger: SignedUp;
  const as = (u: SignedUp, headers: Record<string, string> = {}) => ({ token: u.idToken, tenant: u.tenantId, headers });
  const create = (json: unknown, u = owner, headers: Record<string, string> = {}) => f.call('POST', '/api/segments', { ...as(u, headers), json });

  beforeAll(async () => {
    f = await ManagementApiFixture.start({ QUOTA_SEGMENTS_PER_TENANT: String(QUOTA), SEGMENT_MAX_KEYS: String(MAX_KEYS) });
    owner = await f.signUp();
    stranger = await f.signUp();
  });
  afterAll(async () => {
    await f?.stop();
  });

  it('creates a segment in the request’s environment with an ETag, reads it back there only, and lists it', async () => {
    const res = await create({ key: 'beta', name: 'Beta customers', included: ['u1'], includedContexts: [{ contextKind: 'organization', values: ['acme'] }], rules: [{ id: 'r1', clauses: [{ attribute: 'plan', op: 'in', values: ['pro'] }], weight: 50000 }] });
    expect([res.status, res.headers.get('etag')]).toEqual([201, '"1"']);
    expect(res.body).toMatchObject({
      key: 'beta',
      name: 'Beta customers',
      description: '',
      environment: 'production',
      included: ['u1'],
      excluded: [],
      includedContexts: [{ contextKind: 'organization', values: ['acme'] }],
      excludedContexts: [],
      rules: [{ id: 'r1', clauses: [{ attribute: 'plan', op: 'in', values: ['pro'] }], weight: 50000 }],
      salt: null,
      version: 1,
      warnings: [],
    });
    const got = await f.call('GET', '/api/segments/beta', as(owner));
    expect([got.status, got.headers.get('etag'), got.body.key]).toEqual([200, '"1"', 'beta']);
    expect((await f.call('GET', '/api/segments/beta', as(owner, { 'x-environment': 'staging' }))).status).toBe(404);
    const list = await f.call('GET', '/api/segments', as(owner));
    expect([list.status, list.body.map((s: { key: string }) => s.key)]).toEqual([200, ['beta']]);
    expect((await create({ key: 'beta', name: 'again' })).status).toBe(409);
  });

  it('PATCHes with If-Match: the current ETag passes, a stale one is 412, and the audit trail says who changed what', async () => {
    const ok = await f.call('PATCH', '/api/segments/beta', { ...as(owner, { 'if-match': '"1"' }), json: { excluded: ['u2'], salt: 'pepper' } });
    expect([ok.status, ok.headers.get('etag'), ok.body.excluded, ok.body.salt, ok.body.included]).toEqual([200, '"2"', ['u2'], 'pepper', ['u1']]);
    const stale = await f.call('PATCH', '/api/segments/beta', { ...as(owner, { 'if-match': '"1"' }), json: { name: 'lost' } });
    expect([stale.status, stale.headers.get('content-type'), stale.body.type, stale.body.currentVersion]).toEqual([412, expect.stringContaining('application/problem+json'), '/problems/segment-changed', '"2"']);
    const audit = await f.call('GET', '/api/segments/beta/audit', as(owner));
    expect(audit.body.map((a: { action: string; actor: string }) => [a.action, a.actor])).toEqual([
      ['create', `user:${owner.userId}`],
      ['update', `user:${owner.userId}`],
    ]);
    expect(audit.body[1].changes).toEqual({ excluded: { from: [], to: ['u2'] }, salt: { to: 'pepper' } });
  });

  it('refuses bad bodies with 422 naming each path, unknown nested fields included, and never writes them', async () => {
    const bad = await create({ key: '-bad key', name: '', extra: 1 });
    expect([bad.status, Object.keys(bad.body.errors).sort()]).toEqual([422, ['extra', 'key', 'name']]);
    const nested = await create({ key: 'nested', name: 'n', included: [7], rules: [{ id: 'r', clauses: [{ attribute: 'a', op: 'in', values: ['x'] }], weight: -1, bogusField: true }] });
    expect(nested.status).toBe(422);
    expect(nested.body.errors).toMatchObject({ 'included[0]': 'must be a non-empty string', 'rules[0].weight': 'must be an integer from 0 to 100000' });
    expect(Object.keys(nested.body.errors)).toContain('rules[0].bogusField');
    const patched = await f.call('PATCH', '/api/segments/beta', { ...as(owner), json: { includedContexts: [{ contextKind: 'org' }] } });
    expect([patched.status, patched.body.errors]).toEqual([422, { 'includedContexts[0].values': 'must be an array of context keys' }]);
    expect((await f.call('GET', '/api/segments/nested', as(owner))).status).toBe(404);
  });

  it('bounds the keys one segment lists (SEGMENT_MAX_KEYS), at its longest list', async () => {
    const keys = (n: number, p: string) => Array.from({ length: n }, (_, i) => `${p}${i}`);
    const over = await create({ key: 'huge', name: 'h', included: keys(10, 'u'), excludedContexts: [{ contextKind: 'device', values: keys(MAX_KEYS - 9, 'd') }] });
    expect([over.status, over.body.errors]).toEqual([422, { 'excludedContexts[0].values': `the segment would list ${MAX_KEYS + 1} context keys; a segment may list at most ${MAX_KEYS} (included and excluded, every kind together)` }]);
    expect((await create({ key: 'full', name: 'f', included: keys(MAX_KEYS, 'u') })).status).toBe(201);
  });

  it('refuses deleting a segment that a flag of the environment uses through segmentMatch (409 naming the flag), then deletes it once unused', async () => {
    await create({ key: 'gone', name: 'g' });
    const flag = await f.call('POST', '/api/flags', { ...as(owner), json: { key: 'checkout', name: 'Checkout', type: 'boolean', defaultValue: false } });
    expect(flag.status).toBe(201);
    const rules = (segment: string) => [{ id: 'r', clauses: [{ attribute: 'key', op: 'in', values: ['x'] }, { attribute: '', op: 'segmentMatch', values: [segment] }], variationId: flag.body.variations[0].id }];
    // A segment the environment does not have is refused by path; the one it has is written.
    const missing = await f.call('PATCH', '/api/flags/checkout', { ...as(owner), json: { rules: rules('never-made') } });
    expect([missing.status, missing.body.errors]).toEqual([422, { 'rules[0].clauses[1].values[0]': "no segment 'never-made' in this environment" }]);
    expect((await f.call('PATCH', '/api/flags/checkout', { ...as(owner), json: { rules: rules('gone') } })).status).toBe(200);
    const refused = await f.call('DELETE', '/api/segments/gone', as(owner));
    expect([refused.status, refused.body.type, refused.body.flags, refused.body.segments]).toEqual([409, '/problems/segment-in-use', ['checkout'], []]);
    await f.sql(`UPDATE flag_environments SET rules = '[]' WHERE tenant_id = $1 AND flag_id = $2`, [owner.tenantId, flag.body.id]);
    expect((await f.call('DELETE', '/api/segments/gone', as(owner))).status).toBe(204);
    expect((await f.call('GET', '/api/segments/gone', as(owner))).status).toBe(404);
  });

  it('counts segments of every environment against QUOTA_SEGMENTS_PER_TENANT (409 quota-exceeded)', async () => {
    const { rows } = await f.sql<{ n: number }>('SELECT count(*)::int AS n FROM segments WHERE tenant_id = $1', [owner.tenantId]);
    for (let i = rows[0]!.n; i < QUOTA; i++) expect((await create({ key: `q${i}`, name: 'q' }, owner, { 'x-environment': 'staging' })).status).toBe(201);
    const over = await create({ key: 'one-too-many', name: 'x' });
    expect([over.status, over.body.type, over.body.quota, over.body.limit]).toEqual([409, '/problems/quota-exceeded', 'segments-per-tenant', QUOTA]);
    // Another tenant's count is its own.
    expect((await create({ key: 'one-too-many', name: 'x' }, stranger)).status).toBe(201);
  });

  it('keeps tenants apart: a stranger reads, changes and deletes none of another tenant’s segments', async () => {
    expect((await f.call('GET', '/api/segments/beta', as(stranger))).status).toBe(404);
    expect((await f.call('PATCH', '/api/segments/beta', { ...as(stranger), json: { name: 'mine' } })).status).toBe(404);
    expect((await f.call('DELETE', '/api/segments/beta', as(stranger))).status).toBe(404);
    expect((await f.call('GET', '/api/segments', as(stranger))).body.map((s: { key: string }) => s.key)).toEqual(['one-too-many']);
    // Naming the other tenant in X-Tenant-ID is refused before any read.
    expect((await f.call('GET', '/api/segments/beta', { token: stranger.idToken, tenant: owner.tenantId })).status).toBe(403);
    expect((await f.call('GET', '/api/segments/beta', as(owner))).body.name).toBe('Beta customers');
  });

  it('announces a change on the flags’ change feed, without a flag key (stores re-read the environment)', async () => {
    const sub = new Redis(f.te.redis.url);
    const messages: unknown[] = [];
    await sub.subscribe(`${f.te.redis.prefix}ch:flag-changed`);
    sub.on('message', (_c, m) => messages.push(JSON.parse(m)));
    await f.call('PATCH', '/api/segments/beta', { ...as(owner), json: { description: 'announced' } });
    await waitFor(async () => messages.length > 0);
    sub.disconnect();
    expect(messages).toEqual([{ tenantId: owner.tenantId, environment: 'production', segmentKey: 'beta', version: 3 }]);
  });

  it("goes with the flags in the environment's export (orep-server's flag file), in the evaluator's shape", async () => {
    const exported = await f.call('GET', '/api/flags/export', as(stranger, { 'x-environment': 'production' }));
    expect([exported.status, exported.body.segments]).toEqual([200, [{ key: 'one-too-many', name: 'x', included: [], excluded: [], includedContexts: [], excludedContexts: [], rules: [], version: 1 }]]);
    expect((await f.call('GET', '/api/flags/export', as(stranger, { 'x-environment': 'staging' }))).body.segments).toEqual([]);
  });

  it('travels with the flags on the flag-data stream: in the put, then in a patch when written and a delete when deleted', async () => {
    const streams = new FlagStreamClient(() => f.url);
    try {
      const headers = { authorization: `Bearer ${stranger.idToken}`, 'x-tenant-id': stranger.tenantId, 'x-environment': 'development' };
      expect((await create({ key: 'early', name: 'e', included: ['u1'] }, stranger, { 'x-environment': 'development' })).status).toBe(201);
      const { stream } = await streams.open(headers);
      const put = await stream!.next();
      expect([put.event, put.data.segments.map((x: { key: string }) => x.key)]).toEqual(['put', ['early']]);
      expect((await create({ key: 'later', name: 'l', excluded: ['u9'] }, stranger, { 'x-environment': 'development' })).status).toBe(201);
      const patch = await stream!.next();
      expect([patch.event, patch.data.flags, patch.data.segments.map((x: { key: string; excluded: string[] }) => [x.key, x.excluded])]).toEqual(['patch', [], [['later', ['u9']]]]);
      expect((await f.call('DELETE', '/api/segments/early', as(stranger, { 'x-environment': 'development' }))).status).toBe(204);
      const deleted = await stream!.next();
      expect([deleted.event, deleted.data]).toEqual(['delete', { keys: [], segmentKeys: ['early'] }]);
    } finally {
      streams.closeAll();
    }
  });
});
