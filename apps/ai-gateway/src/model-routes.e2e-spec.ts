/**
 * A bound route's spend cap per variation (issue 36) where a deployment has it: two built gateway
 * processes on one database and one Redis, a flag serving every user its treatment, whose monthly
 * cap covers about a dozen requests' estimates, and many more requests fired at both gateways at
 * once through the `openai` client, each held upstream a while so that many are in flight when the
 * cap is reached. Throughout, what the treatment's month uses (pending rows at their hold, completed
 * ones at their debit, one statement's snapshot) never exceeds the cap; every request is answered
 * 200, those past the cap by the control (the flag's off variation) with `spend_cap` recorded.
 * Needs the build: `npx nx run ai-gateway:build`.
 */
import OpenAI from 'openai';
import { DATA_SOURCE } from '@flagship/persistence';
import { type BuiltProcess, type FakeModelUpstream, waitFor } from '@flagship/testing';
import { type GatewayE2e, NO_RATE_LIMITS, setUpGatewayE2e } from './testing/built-gateway.fixture';
import { createTenant, type IssueToken, type Sql } from './testing/gateway.fixture';

const REQUESTS = 80;
const IN_FLIGHT = 16;
/** About a dozen of these requests' estimates (gpt-4o-mini at its catalogue prices: about 85 micro-credits for ~150 bytes and 100 output tokens). */
const CAP = 1_000;

describe('two gateway processes, one spend cap per variation', () => {
  let e2e: GatewayE2e;
  let fake: FakeModelUpstream;
  let issue: IssueToken;
  let ds: Sql;
  let gateways: BuiltProcess[] = [];
  let tenant: string;

  beforeAll(async () => {
    e2e = await setUpGatewayE2e();
    ({ fake, issue } = e2e);
    ds = e2e.issuer.app.get<Sql>(DATA_SOURCE);
    tenant = await createTenant(ds, { plan: 'premium', entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: 1_000_000_000 });
    await ds.query(`INSERT INTO environments (tenant_id, key, name) VALUES ($1, 'production', 'Production')`, [tenant]);
    const variations = [
      { id: 'control', name: 'Control', value: { model: 'fake-chat-1' }, weight: 0 },
      { id: 'treatment', name: 'Treatment', value: { model: 'gpt-4o-mini' }, weight: 1 },
    ];
    const [{ id }] = await ds.query<Array<{ id: string }>>(`INSERT INTO flags (tenant_id, key, name, type, default_value, variations) VALUES ($1, 'model-rollout', 'm', 'json', $2::jsonb, $3::jsonb) RETURNING id`, [
      tenant,
      JSON.stringify({ model: 'fake-chat-1' }),
      JSON.stringify(variations),
    ]);
    await ds.query(`INSERT INTO flag_environments (tenant_id, flag_id, environment_key, enabled, off_value) VALUES ($1, $2, 'production', true, $3::jsonb)`, [tenant, id, JSON.stringify({ model: 'fake-chat-1' })]);
    await ds.query(`INSERT INTO gateway_bindings (tenant_id, product_key, flag_key, spend_caps) VALUES ($1, 'core', 'model-rollout', $2::jsonb)`, [tenant, JSON.stringify({ treatment: CAP })]);
    gateways = await Promise.all([0, 1].map(() => e2e.startGateway(NO_RATE_LIMITS)));
  }, 60_000);

  afterAll(() => e2e?.close());

  it('the treatment never uses more than its cap, whichever gateway admits; past it, requests are served by the control, recorded as spend_cap', async () => {
    fake.behave({ firstByteDelayMs: 150 });
    const token = await issue(tenant, ['core']);
    const clients = gateways.map((g) => new OpenAI({ baseURL: `${g.url}/v1`, apiKey: token, defaultHeaders: { 'x-service-product-key': 'core' }, maxRetries: 0, timeout: 30_000 }));
    const USED = `SELECT COALESCE(sum(CASE WHEN status = 'pending' THEN reserved ELSE debit END), 0)::bigint AS used FROM usage_ledger WHERE tenant_id = $1 AND variation = 'treatment'`;
    let running = true;
    let mostUsed = 0;
    const sampler = (async () => {
      while (running) {
        const [row] = await ds.query<Array<{ used: string }>>(USED, [tenant]);
        mostUsed = Math.max(mostUsed, Number(row!.used));
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const models: string[] = [];
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < REQUESTS) {
        const i = next++;
        const answer = await clients[i % 2]!.chat.completions.create({ model: 'fake-chat-1', messages: [{ role: 'user', content: `hello ${i}` }], max_tokens: 100, user: `user-${i}` });
        models.push(answer.model);
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    // Answers go out before their settlements are written: wait for the last.
    await waitFor(async () => (await ds.query<Array<{ n: number }>>(`SELECT count(*)::int AS n FROM usage_ledger WHERE tenant_id = $1 AND status = 'pending'`, [tenant]))[0]!.n === 0);
    running = false;
    await sampler;
    const [final] = await ds.query<Array<{ used: string }>>(USED, [tenant]);
    const rows = await ds.query<Array<{ variation: string; route_reason: string | null; status: string; n: number }>>(
      `SELECT variation, route_reason, status, count(*)::int AS n FROM usage_ledger WHERE tenant_id = $1 GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`,
      [tenant],
    );
    const count = (match: (r: (typeof rows)[number]) => boolean): number => rows.filter(match).reduce((n, r) => n + r.n, 0);
    const treated = count((r) => r.variation === 'treatment');
    const capped = count((r) => r.variation === 'control' && r.route_reason === 'spend_cap');
    expect(models).toHaveLength(REQUESTS);
    expect(models.filter((m) => m === 'gpt-4o-mini')).toHaveLength(treated);
    expect(treated + capped).toBe(REQUESTS);
    expect(rows.every((r) => r.status === 'succeeded')).toBe(true);
    // Both sides of the cap were reached under concurrency, and the cap held at every moment sampled.
    expect(treated).toBeGreaterThan(5);
    expect(capped).toBeGreaterThan(0);
    expect(mostUsed).toBeGreaterThan(CAP / 2);
    expect(Math.max(mostUsed, Number(final!.used))).toBeLessThanOrEqual(CAP);
  }, 120_000);
});
