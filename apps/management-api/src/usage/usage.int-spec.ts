import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { UsageRollupsRepository } from '@flagship/ledger';
import { DATA_SOURCE } from '@flagship/persistence';
import { http } from '@flagship/testing';
import { ManagementApiFixture, type SignedUp } from '../testing/management-api.fixture';

interface LedgerRow {
  productKey: string;
  model: string;
  status: 'pending' | 'succeeded' | 'failed' | 'abandoned';
  createdAt: string;
  inputTokens?: number;
  outputTokens?: number;
  debit?: number;
  reserved?: number;
  zeroRated?: boolean;
  cachedTokens?: number;
  /** [inputPer1k, outputPer1k, cachedInputPer1k]: the prices the gateway recorded; absent on rows from before it did. */
  prices?: [number, number, number | null];
  /** The caller's own x-request-id the gateway recorded. */
  clientRequestId?: string;
  overrun?: boolean;
}

describe('GET /api/usage and /api/usage/summary (real HTTP, Postgres, Redis)', () => {
  let f: ManagementApiFixture;
  let ada: SignedUp;
  let editor: SignedUp;
  let viewer: SignedUp;
  let stranger: SignedUp;
  const ids: Record<string, string> = {};

  /** A row as the gateway writes it (pending with a reservation, or completed). */
  const insert = async (tenantId: string, name: string, r: LedgerRow) => {
    const id = randomUUID();
    ids[name] = id;
    await f.sql(
      `INSERT INTO usage_ledger (id, tenant_id, client_id, product_key, provider, model, endpoint, status, reserved, debit,
                                 zero_rated, zero_rated_reason, input_tokens, output_tokens, request_id, created_at, completed_at,
                                 cached_tokens, input_per_1k, output_per_1k, cached_input_per_1k, client_request_id, overrun)
       VALUES ($1, $2, 'ffc_test', $3, 'inhouse', $4, 'chat.completions', $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)`,
      [
        id, tenantId, r.productKey, r.model, r.status, r.reserved ?? 0, r.debit ?? 0, r.zeroRated ?? false, r.zeroRated ? 'internal product' : null,
        r.inputTokens ?? 0, r.outputTokens ?? 0, `req-${name}`, r.createdAt, r.status === 'pending' ? null : r.createdAt,
        r.cachedTokens ?? 0, r.prices?.[0] ?? null, r.prices?.[1] ?? null, r.prices?.[2] ?? null, r.clientRequestId ?? null, r.overrun ?? false,
      ],
    );
  };

  beforeAll(async () => {
    f = await ManagementApiFixture.start();
    ada = await f.signUp();
    editor = await f.signUp();
    viewer = await f.signUp();
    stranger = await f.signUp();
    for (const [u, role] of [[editor, 'editor'], [viewer, 'viewer']] as const) {
      await f.addMember(ada, ada.tenantId, u.email, role, u);
    }
    const t = ada.tenantId;
    await insert(t, 'a', { productKey: 'core', model: 'small', status: 'succeeded', createdAt: '2026-11-01T10:00:00.000Z', inputTokens: 10, outputTokens: 20, debit: 300 });
    await insert(t, 'b', { productKey: 'core', model: 'small', status: 'failed', createdAt: '2026-11-02T10:00:00.000Z', inputTokens: 5, debit: 0 });
    await insert(t, 'c', { productKey: 'core', model: 'large', status: 'succeeded', createdAt: '2026-11-03T10:00:00.000Z', inputTokens: 100, outputTokens: 50, debit: 4000, cachedTokens: 40, prices: [2500, 10000, 1250], clientRequestId: 'order-7f3a:42', overrun: true });
    await insert(t, 'd', { productKey: 'insights', model: 'small', status: 'succeeded', createdAt: '2026-11-04T10:00:00.000Z', inputTokens: 7, outputTokens: 3, zeroRated: true });
    // Two rows of one millisecond: pages must neither skip nor repeat either.
    await insert(t, 'e', { productKey: 'core', model: 'small', status: 'pending', createdAt: '2026-11-05T10:00:00.000Z', reserved: 500 });
    await insert(t, 'f', { productKey: 'core', model: 'small', status: 'abandoned', createdAt: '2026-11-05T10:00:00.000Z', reserved: 200 });
    await insert(stranger.tenantId, 'x', { productKey: 'core', model: 'small', status: 'succeeded', createdAt: '2026-11-03T12:00:00.000Z', inputTokens: 999, debit: 999, clientRequestId: 'order-7f3a:42' });
    // Rows written straight into the table, not by the ledger's statements: their rollups rebuilt, as after an import.
    const rollups = new UsageRollupsRepository();
    for (const tenant of [t, stranger.tenantId]) await f.svc.app.get<DataSource>(DATA_SOURCE).transaction((m) => rollups.rebuild(m, tenant));
  });
  afterAll(async () => {
    await f?.stop();
  });

  const get = (path: string, u: SignedUp = ada, tenant: string | undefined = ada.tenantId) => f.call('GET', path, { token: u.idToken, tenant });
  const sameMs = () => [ids['e'], ids['f']].sort().reverse();

  it('lists the tenant\'s rows newest first, with ties in id order, and none of another tenant', async () => {
    const res = await get('/api/usage');
    expect(res.status).toBe(200);
    expect(res.headers.get('link')).toBeNull();
    expect(res.body.map((r: { id: string }) => r.id)).toEqual([...sameMs(), ids['d'], ids['c'], ids['b'], ids['a']]);
    expect(res.body.find((r: { id: string }) => r.id === ids['c'])).toEqual({
      id: ids['c'], clientId: 'ffc_test', productKey: 'core', provider: 'inhouse', requestedProvider: null, model: 'large', endpoint: 'chat.completions',
      stream: false, status: 'succeeded', reserved: 0, debit: 4000, zeroRated: false, zeroRatedReason: null, inputTokens: 100, outputTokens: 50,
      cachedTokens: 40, inputPer1k: 2500, outputPer1k: 10000, cachedInputPer1k: 1250,
      usageEstimated: false, overrun: true, errorCode: null, latencyMs: null, requestId: 'req-c', clientRequestId: 'order-7f3a:42',
      createdAt: '2026-11-03T10:00:00.000Z', completedAt: '2026-11-03T10:00:00.000Z',
    });
    expect(res.body.find((r: { id: string }) => r.id === ids['a'])).toMatchObject({ overrun: false, clientRequestId: null });
    expect(res.body.find((r: { id: string }) => r.id === ids['d'])).toMatchObject({ zeroRated: true, zeroRatedReason: 'internal product', debit: 0 });
    // A row from before prices were recorded says so: null prices, no cached tokens.
    expect(res.body.find((r: { id: string }) => r.id === ids['a'])).toMatchObject({ cachedTokens: 0, inputPer1k: null, outputPer1k: null, cachedInputPer1k: null });
  });

  it('pages with Link rel="next" through every row exactly once, filters kept', async () => {
    const seen: string[] = [];
    let next: string | null = '/api/usage?limit=2&productKey=core';
    let pages = 0;
    while (next) {
      const res = await get(next);
      expect(res.status).toBe(200);
      expect(res.body.length).toBeLessThanOrEqual(2);
      seen.push(...res.body.map((r: { id: string }) => r.id));
      next = /<([^>]+)>; rel="next"/.exec(res.headers.get('link') ?? '')?.[1] ?? null;
      pages++;
    }
    expect(pages).toBe(3);
    expect(seen).toEqual([...sameMs(), ids['c'], ids['b'], ids['a']]);
  });

  it('filters by from (inclusive), to (exclusive), productKey, status, model and the caller\'s own request id', async () => {
    const idsOf = async (q: string) => {
      const res = await get(`/api/usage?${q}`);
      expect(res.status).toBe(200);
      return res.body.map((r: { id: string }) => r.id);
    };
    expect(await idsOf('from=2026-11-02T10:00:00Z&to=2026-11-04T10:00:00Z')).toEqual([ids['c'], ids['b']]);
    expect(await idsOf('from=2026-11-04')).toEqual([...sameMs(), ids['d']]);
    expect(await idsOf('to=2026-11-02T11:00:00%2B01:00')).toEqual([ids['a']]);
    expect(await idsOf('productKey=insights')).toEqual([ids['d']]);
    expect(await idsOf('status=succeeded&model=small')).toEqual([ids['d'], ids['a']]);
    expect(await idsOf('status=abandoned')).toEqual([ids['f']]);
    expect(await idsOf('model=huge')).toEqual([]);
    expect(await idsOf('from=2026-11-03T10:00:00Z&to=2026-11-03T10:00:00Z')).toEqual([]);
    // A product backend finds what its own request was charged (another tenant's row of the same id stays theirs).
    expect(await idsOf('clientRequestId=order-7f3a:42')).toEqual([ids['c']]);
    expect(await idsOf('clientRequestId=order-7f3a:43')).toEqual([]);
  });

  it('sums the same filter per UTC day, product and model (the console\'s chart), pending rows included', async () => {
    const res = await get('/api/usage/daily?from=2026-11-02T00:00:00Z&productKey=core');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      from: '2026-11-02T00:00:00.000Z',
      to: null,
      days: [
        { day: '2026-11-02', productKey: 'core', model: 'small', requests: 1, inputTokens: 5, outputTokens: 0, debit: 0 },
        { day: '2026-11-03', productKey: 'core', model: 'large', requests: 1, inputTokens: 100, outputTokens: 50, debit: 4000 },
        { day: '2026-11-05', productKey: 'core', model: 'small', requests: 2, inputTokens: 0, outputTokens: 0, debit: 0 },
      ],
    });
    expect((await get('/api/usage/daily', stranger, ada.tenantId)).status).toBe(403);
    expect((await get('/api/usage/daily?from=2026-02-30')).status).toBe(422);
  });

  it('sums tokens and debits per product and model for the same filter', async () => {
    const all = await get('/api/usage/summary');
    expect(all.status).toBe(200);
    expect(all.body).toEqual({
      from: null,
      to: null,
      totals: { requests: 6, inputTokens: 122, outputTokens: 73, debit: 4300 },
      byProductAndModel: [
        { productKey: 'core', model: 'large', requests: 1, inputTokens: 100, outputTokens: 50, debit: 4000 },
        { productKey: 'core', model: 'small', requests: 4, inputTokens: 15, outputTokens: 20, debit: 300 },
        { productKey: 'insights', model: 'small', requests: 1, inputTokens: 7, outputTokens: 3, debit: 0 },
      ],
    });
    const some = await get('/api/usage/summary?from=2026-11-02&status=succeeded');
    expect(some.body).toEqual({
      from: '2026-11-02T00:00:00.000Z',
      to: null,
      totals: { requests: 2, inputTokens: 107, outputTokens: 53, debit: 4000 },
      byProductAndModel: [
        { productKey: 'core', model: 'large', requests: 1, inputTokens: 100, outputTokens: 50, debit: 4000 },
        { productKey: 'insights', model: 'small', requests: 1, inputTokens: 7, outputTokens: 3, debit: 0 },
      ],
    });
    const none = await get('/api/usage/summary?model=huge');
    expect(none.body).toEqual({ from: null, to: null, totals: { requests: 0, inputTokens: 0, outputTokens: 0, debit: 0 }, byProductAndModel: [] });
  });

  it('is for tenant admins: editors and viewers 403, foreign tenants 403, client tokens 403', async () => {
    for (const path of ['/api/usage', '/api/usage/summary']) {
      for (const u of [editor, viewer]) {
        const res = await get(path, u);
        expect([path, res.status, res.body.type]).toEqual([path, 403, '/problems/role-required']);
      }
      const foreign = await get(path, stranger);
      expect([path, foreign.status, foreign.body.type]).toEqual([path, 403, '/problems/tenant-access-denied']);
      // The stranger's own ledger is theirs alone: one row, never ada's.
      const own = await get(path, stranger, stranger.tenantId);
      expect(own.status).toBe(200);
      expect((await f.call('GET', path, { tenant: ada.tenantId })).status).toBe(401);
    }
    expect((await get('/api/usage', stranger, stranger.tenantId)).body.map((r: { id: string }) => r.id)).toEqual([ids['x']]);
    const client = await f.call('POST', '/api/oauth/clients', { token: ada.idToken, tenant: ada.tenantId, json: { name: 'backend', scopes: ['flags:read', 'projects:read'] } });
    const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: client.body.clientId, client_secret: client.body.clientSecret });
    const token = (await http(`${f.url}/oauth/token`, { method: 'POST', body: form.toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } })).body.access_token;
    for (const path of ['/api/usage', '/api/usage/summary']) {
      const res = await f.call('GET', path, { token });
      expect([path, res.status, res.body.type]).toEqual([path, 403, '/problems/users-only']);
    }
  });

  it('answers bad filters 422 naming the field, for the list and the summary alike', async () => {
    const cases: Array<[string, string]> = [
      ['from=yesterday', 'from'],
      ['from=2026-11-01T10:00:00', 'from'], // no zone
      ['to=2026-02-30', 'to'],
      ['to=2026-02-30T10:00:00Z', 'to'],
      ['from=2026-11-01T25:00:00Z', 'from'],
      ['from=1969-12-31T00:00:00Z', 'from'],
      ['from=2026-11-05&to=2026-11-01', 'from'],
      ['status=done', 'status'],
      ['status=pending&status=failed', 'status'],
      ['productKey=Core!', 'productKey'],
      ['model=a%00b', 'model'],
      [`model=${'m'.repeat(257)}`, 'model'],
      ['model=', 'model'],
      ['clientRequestId=two%20words', 'clientRequestId'],
      [`clientRequestId=${'x'.repeat(129)}`, 'clientRequestId'],
      ['clientRequestId=', 'clientRequestId'],
      ['tenantId=x', 'tenantId'],
    ];
    for (const path of ['/api/usage', '/api/usage/summary']) {
      for (const [q, field] of cases) {
        const res = await get(`${path}?${q}`);
        expect([q, res.status, res.body.type, Object.keys(res.body.errors ?? {})]).toEqual([q, 422, '/problems/validation-failed', [field]]);
      }
    }
    for (const q of ['limit=0', 'limit=1001', 'limit=two']) expect([q, (await get(`/api/usage?${q}`)).status]).toEqual([q, 422]);
  });

  it('refuses forged cursors with 400, never a 500', async () => {
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    for (const cursor of ['garbage', b64(['x', 'y']), b64(['2026-11-01T00:00:00.000Z', 'not-a-uuid']), b64(['not-a-date', randomUUID()]), b64(['99999-01-01T00:00:00Z', randomUUID()]), b64({ at: 1 })]) {
      const res = await get(`/api/usage?cursor=${encodeURIComponent(cursor)}`);
      expect([cursor, res.status, res.body.type]).toEqual([cursor, 400, '/problems/bad-request']);
    }
    // A well-formed cursor this API could have issued is a position, whatever it names.
    const res = await get(`/api/usage?cursor=${b64(['2026-11-03T00:00:00.000Z', randomUUID()])}`);
    expect([res.status, res.body.map((r: { id: string }) => r.id)]).toEqual([200, [ids['b'], ids['a']]]);
  });
});
