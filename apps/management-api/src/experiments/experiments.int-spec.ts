import { randomUUID } from 'node:crypto';
import { ManagementApiFixture, type SignedUp } from '../testing/management-api.fixture';
import { maritzJarrettSe, newcombeDifference, normalQuantile, quantile, welchDifference, momentsOf } from './experiment-stats';

/** One completed (or pending) gateway request of a bound flag, as the gateway's ledger write records it. */
interface Row {
  tenantId: string;
  flagKey: string;
  variation: string | null;
  status: 'succeeded' | 'failed' | 'abandoned' | 'pending';
  createdAt: string;
  latencyMs?: number;
  firstTokenMs?: number;
  stream?: boolean;
  debit?: number;
  inputTokens?: number;
  outputTokens?: number;
  errorCode?: string;
  productKey?: string;
  score?: number;
}

/** A deterministic generator (mulberry32), so the data and thus the expected figures are fixed. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('GET /api/usage/experiments/{flagKey} (real HTTP, Postgres)', () => {
  let f: ManagementApiFixture;
  let ada: SignedUp;
  let stranger: SignedUp;
  let control: string;
  let treatment: string;
  const rows: Row[] = [];

  const insert = async (r: Row) => {
    const requestId = `req-${randomUUID()}`;
    await f.sql(
      `INSERT INTO usage_ledger (tenant_id, client_id, product_key, provider, model, endpoint, stream, status, debit, input_tokens, output_tokens,
                                 error_code, latency_ms, request_id, created_at, completed_at, flag_key, flag_version, variation, context_kind, first_token_ms)
       VALUES ($1, 'ffc_test', $2, 'inhouse', 'm', 'chat.completions', $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, 1, $14, 'multi', $15)`,
      [r.tenantId, r.productKey ?? 'core', r.stream ?? false, r.status, r.debit ?? 0, r.inputTokens ?? 0, r.outputTokens ?? 0, r.errorCode ?? null, r.latencyMs ?? null, requestId,
        r.createdAt, r.status === 'pending' ? null : r.createdAt, r.flagKey, r.variation, r.firstTokenMs ?? null],
    );
    if (r.score !== undefined) {
      await f.sql(`INSERT INTO usage_feedback (tenant_id, request_id, client_id, score) VALUES ($1, $2, 'ffc_test', $3)`, [r.tenantId, requestId, r.score]);
    }
  };

  beforeAll(async () => {
    f = await ManagementApiFixture.start();
    ada = await f.signUp();
    stranger = await f.signUp();
    const created = await f.call('POST', '/api/flags', {
      token: ada.idToken, tenant: ada.tenantId,
      json: { key: 'chat-model', name: 'chat model', type: 'json', defaultValue: { model: 'small' }, flag_variations: [{ name: 'small', value: { model: 'small' } }, { name: 'large', value: { model: 'large' } }] },
    });
    expect(created.status).toBe(201);
    const variations = (await f.sql<{ variations: Array<{ id: string; name: string }> }>(`SELECT variations FROM flags WHERE tenant_id = $1 AND key = 'chat-model'`, [ada.tenantId])).rows[0]!.variations;
    control = variations.find((v) => v.name === 'small')!.id;
    await f.sql(`INSERT INTO gateway_bindings (tenant_id, product_key, flag_key, rollout_plan) VALUES ($1, 'core', 'chat-model', '{"stages":[{"percent":10}],"guards":{}}')`, [ada.tenantId]);
    treatment = variations.find((v) => v.name === 'large')!.id;

    const rnd = random(36);
    const at = (i: number) => new Date(Date.UTC(2026, 10, 10) + i * 60_000).toISOString();
    for (let i = 0; i < 160; i++) {
      const failed = rnd() < 0.03;
      const stream = rnd() < 0.5;
      rows.push({ tenantId: ada.tenantId, flagKey: 'chat-model', variation: control, status: failed ? 'failed' : 'succeeded', createdAt: at(i), errorCode: failed ? 'upstream_error' : undefined,
        latencyMs: Math.round(200 + 300 * rnd()), stream, firstTokenMs: stream ? Math.round(50 + 100 * rnd()) : undefined, debit: failed ? 0 : Math.round(900 + 200 * rnd()),
        inputTokens: 30, outputTokens: 40, score: rnd() < 0.4 ? Math.round(rnd() * 5) : undefined });
    }
    for (let i = 0; i < 130; i++) {
      const r = rnd();
      const status = r < 0.06 ? 'failed' : r < 0.08 ? 'abandoned' : 'succeeded';
      const stream = rnd() < 0.5;
      rows.push({ tenantId: ada.tenantId, flagKey: 'chat-model', variation: treatment, status, createdAt: at(i + 5), errorCode: status === 'failed' ? (rnd() < 0.5 ? 'upstream_timeout' : 'upstream_error') : undefined,
        latencyMs: Math.round(250 + 450 * rnd()), stream, firstTokenMs: stream ? Math.round(60 + 150 * rnd()) : undefined, debit: status === 'succeeded' ? Math.round(2000 + 500 * rnd()) : 0,
        inputTokens: 30, outputTokens: 55, score: rnd() < 0.4 ? Math.round(1 + rnd() * 4) : undefined });
    }
    // Served the route default (the binding's flag was malformed for a while).
    for (let i = 0; i < 3; i++) rows.push({ tenantId: ada.tenantId, flagKey: 'chat-model', variation: null, status: 'succeeded', createdAt: at(i), latencyMs: 100, debit: 500 });
    // Not counted: in flight, outside the range, another flag, another tenant's rows of a flag of the same key.
    const noise: Row[] = [
      { tenantId: ada.tenantId, flagKey: 'chat-model', variation: treatment, status: 'pending', createdAt: at(10) },
      { tenantId: ada.tenantId, flagKey: 'chat-model', variation: treatment, status: 'failed', createdAt: '2026-11-01T00:00:00Z', errorCode: 'x' },
      { tenantId: ada.tenantId, flagKey: 'other-flag', variation: treatment, status: 'failed', createdAt: at(10), errorCode: 'x' },
      { tenantId: stranger.tenantId, flagKey: 'chat-model', variation: treatment, status: 'failed', createdAt: at(10), errorCode: 'x', debit: 0, latencyMs: 1 },
    ];
    for (const r of [...rows, ...noise]) await insert(r);
  }, 120_000);
  afterAll(async () => {
    await f?.stop();
  });

  const range = 'from=2026-11-09T00:00:00Z&to=2026-11-12T00:00:00Z';
  const get = (path: string, u: SignedUp = ada, tenant = u.tenantId) => f.call('GET', path, { token: u.idToken, tenant });

  it("reports each variation's figures as a direct computation over the same rows, and the differences against the control", async () => {
    const res = await get(`/api/usage/experiments/chat-model?${range}`);
    expect(res.status).toBe(200);
    expect(res.body.controlVariationId).toBe(control);
    expect(res.body.bindings).toEqual([{ productKey: 'core', modelAlias: null, rolloutPlan: true }]);
    const names = (res.body.variations as Array<{ name: string; control: boolean }>).map((v) => [v.name, v.control]);
    expect(names[0]).toEqual(['(route default)', false]);
    expect(names.slice(1).sort()).toEqual([['large', false], ['small', true]]);

    // The direct computation, from the rows as generated (not from SQL): every figure of both arms.
    for (const id of [control, treatment]) {
      const mine = rows.filter((r) => r.variation === id);
      const ok = mine.filter((r) => r.status === 'succeeded');
      const lat = ok.map((r) => r.latencyMs!).sort((a, b) => a - b);
      const ttft = ok.filter((r) => r.stream).map((r) => r.firstTokenMs!).sort((a, b) => a - b);
      const scores = mine.filter((r) => r.score !== undefined).map((r) => r.score!);
      const codes: Record<string, number> = {};
      for (const r of mine.filter((x) => x.status !== 'succeeded')) codes[r.errorCode ?? r.status] = (codes[r.errorCode ?? r.status] ?? 0) + 1;
      const debit = mine.reduce((s, r) => s + (r.debit ?? 0), 0);
      const v = res.body.variations.find((x: { variationId: string }) => x.variationId === id);
      expect(v).toMatchObject({
        recorded: id,
        requests: mine.length,
        errors: mine.length - ok.length,
        errorRate: (mine.length - ok.length) / mine.length,
        errorsByCode: codes,
        inputTokens: mine.reduce((s, r) => s + (r.inputTokens ?? 0), 0),
        outputTokens: mine.reduce((s, r) => s + (r.outputTokens ?? 0), 0),
        debit,
        costPerRequest: debit / mine.length,
        latencyMs: { n: lat.length, p50: quantile(lat, 0.5), p95: quantile(lat, 0.95) },
        timeToFirstTokenMs: { n: ttft.length, p50: quantile(ttft, 0.5), p95: quantile(ttft, 0.95) },
      });
      expect(v.feedback.n).toBe(scores.length);
      expect(v.feedback.mean).toBeCloseTo(scores.reduce((s, x) => s + x, 0) / scores.length, 10);
    }

    const arm = (id: string) => rows.filter((r) => r.variation === id);
    const [t, c] = [arm(treatment), arm(control)];
    const errors = (xs: Row[]) => xs.filter((r) => r.status !== 'succeeded').length;
    const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
    const latT = sorted(t.filter((r) => r.status === 'succeeded').map((r) => r.latencyMs!));
    const latC = sorted(c.filter((r) => r.status === 'succeeded').map((r) => r.latencyMs!));
    const moments = (xs: number[]) => momentsOf(xs.length, xs.reduce((s, x) => s + x, 0), xs.reduce((s, x) => s + x * x, 0));
    const vs = res.body.variations.find((x: { variationId: string }) => x.variationId === treatment).vsControl;
    const near = (got: { estimate: number; lower: number; upper: number }, want: { estimate: number; lower: number; upper: number }) => {
      expect(got.estimate).toBeCloseTo(want.estimate, 9);
      expect(got.lower).toBeCloseTo(want.lower, 9);
      expect(got.upper).toBeCloseTo(want.upper, 9);
    };
    near(vs.errorRate, newcombeDifference(errors(t), t.length, errors(c), c.length));
    expect(vs.errorRate.method).toBe('newcombe-hybrid-score');
    near(vs.costPerRequest, welchDifference(moments(t.map((r) => r.debit ?? 0)), moments(c.map((r) => r.debit ?? 0)))!);
    near(vs.feedback, welchDifference(moments(t.filter((r) => r.score !== undefined).map((r) => r.score!)), moments(c.filter((r) => r.score !== undefined).map((r) => r.score!)))!);
    const half = normalQuantile(0.975) * Math.hypot(maritzJarrettSe(latT, 0.95)!, maritzJarrettSe(latC, 0.95)!);
    const d = quantile(latT, 0.95)! - quantile(latC, 0.95)!;
    near(vs.latencyP95Ms, { estimate: d, lower: d - half, upper: d + half });
    expect(vs.latencyP95Ms.method).toBe('maritz-jarrett');
    // The treatment costs more, with significance: the interval excludes 0.
    expect(vs.costPerRequest.lower).toBeGreaterThan(0);

    const byDefault = res.body.variations.find((x: { recorded: string | null }) => x.recorded === null);
    expect(byDefault).toMatchObject({ name: '(route default)', variationId: null, control: false, requests: 3, debit: 1500 });
    // 130 and 160 requests: enough; the feedback arms (about 50 each) too; nothing to warn of but the default's 3 rows.
    expect(res.body.warnings).toEqual([
      expect.stringMatching(/^\(route default\) vs small: 3 requests in the smaller arm/),
      expect.stringMatching(/^\(route default\) vs small: p95 latency rests on 3/),
      expect.stringMatching(/^\(route default\) vs small: mean feedback rests on 0 scores/),
    ]);

    // The series sums back to the totals.
    const points = res.body.series.points as Array<{ variationId: string | null; requests: number; debit: number }>;
    expect(points.filter((p) => p.variationId === treatment).reduce((s, p) => s + p.requests, 0)).toBe(t.length);
    expect(points.filter((p) => p.variationId === control).reduce((s, p) => s + p.debit, 0)).toBe(c.reduce((s, r) => s + (r.debit ?? 0), 0));
    expect(res.body.series.bucketSeconds).toBe(3600);
  });

  it('warns while samples are too small, and narrows to one product key', async () => {
    const res = await get(`/api/usage/experiments/chat-model?from=2026-11-10T00:00:00Z&to=2026-11-10T00:20:00Z`);
    expect(res.status).toBe(200);
    expect(res.body.warnings).toEqual(expect.arrayContaining([expect.stringMatching(/^large vs small: \d+ requests in the smaller arm; intervals are too wide to decide on below 100/)]));
    const other = await get(`/api/usage/experiments/chat-model?${range}&productKey=insights`);
    expect(other.status).toBe(200);
    expect(other.body.variations).toEqual([]);
  });

  it('is bounded: a range over 92 days or inverted is 422, a malformed or unknown flag 404', async () => {
    expect((await get('/api/usage/experiments/chat-model?from=2026-01-01T00:00:00Z&to=2026-06-01T00:00:00Z')).status).toBe(422);
    expect((await get('/api/usage/experiments/chat-model?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z')).status).toBe(422);
    expect((await get('/api/usage/experiments/no-such-flag')).status).toBe(404);
    const bad = await get(`/api/usage/experiments/${encodeURIComponent('bad key!')}`);
    expect(bad.status).toBe(404);
    expect(bad.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  });

  it('reports at most 50 variations of a flag, and says so when the ledger records more', async () => {
    await f.sql(
      `INSERT INTO usage_ledger (tenant_id, client_id, product_key, provider, model, endpoint, status, request_id, created_at, completed_at, flag_key, variation)
       SELECT $1, 'ffc_test', 'core', 'inhouse', 'm', 'chat.completions', 'succeeded', 'many-' || i, '2026-11-10T12:00:00Z', '2026-11-10T12:00:00Z', 'many-variations', 'v' || lpad(i::text, 3, '0')
         FROM generate_series(1, 60) AS i`,
      [ada.tenantId],
    );
    const res = await get(`/api/usage/experiments/many-variations?${range}`);
    expect(res.status).toBe(200);
    expect(res.body.variations).toHaveLength(50);
    expect(res.body.variations[49].recorded).toBe('v050');
    expect(res.body.warnings).toEqual(expect.arrayContaining([expect.stringMatching(/^The ledger records more than 50 variations/)]));
    expect(new Set(res.body.series.points.map((p: { recorded: string }) => p.recorded)).size).toBe(50);
  });

  it("keeps tenants apart: another tenant's rows of the same flag key are neither counted nor readable", async () => {
    // The stranger has a row of chat-model but no flag: its own report shows only its row.
    const own = await get(`/api/usage/experiments/chat-model?${range}`, stranger);
    expect(own.status).toBe(200);
    expect(own.body.variations.map((v: { requests: number }) => v.requests)).toEqual([1]);
    expect(own.body.warnings[0]).toMatch(/does not exist/);
    expect((await get(`/api/usage/experiments/chat-model?${range}`, stranger, ada.tenantId)).status).toBe(403);
    const mine = await get(`/api/usage/experiments/chat-model?${range}`);
    expect(mine.body.variations.reduce((s: number, v: { requests: number }) => s + v.requests, 0)).toBe(rows.length);
  });
});
