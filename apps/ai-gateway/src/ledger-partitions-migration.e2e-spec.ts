/**
 * The migration to a partitioned usage_ledger (UsageLedgerPartitions1763905000000) run while two built
 * gateway processes serve paid and zero-rated chat completions on the ledger (the table as it was
 * before, restored by the migration's down): every request is answered 200, each has exactly one
 * `succeeded` row debited its cost, nothing stays pending or reserved, and the balance fell by exactly
 * the rows' debits. Needs the build: `npx nx run ai-gateway:build`.
 */
import OpenAI from 'openai';
import type { DataSource, MigrationInterface } from 'typeorm';
import { DATA_SOURCE, MIGRATIONS } from '@flagship/persistence';
import { type BuiltProcess, waitFor } from '@flagship/testing';
import { type GatewayE2e, NO_RATE_LIMITS, setUpGatewayE2e } from './testing/built-gateway.fixture';
import { balanceOf, createTenant, fakeChatCost as cost, ledgerRows, type Sql } from './testing/gateway.fixture';

const Partitions = MIGRATIONS.find((m) => m.name === 'UsageLedgerPartitions1763905000000')! as new () => MigrationInterface;
const IN_FLIGHT = 8;

describe('usage_ledger partitioned while two gateways serve', () => {
  let e2e: GatewayE2e;
  let ds: DataSource;
  let gateways: BuiltProcess[] = [];

  beforeAll(async () => {
    e2e = await setUpGatewayE2e();
    ds = e2e.issuer.app.get<DataSource>(DATA_SOURCE);
    const runner = ds.createQueryRunner();
    await new Partitions().down(runner);
    await runner.release();
    gateways = await Promise.all([0, 1].map(() => e2e.startGateway(NO_RATE_LIMITS)));
  }, 60_000);

  afterAll(() => e2e?.close());

  it('answers every request, one succeeded row each at its cost, nothing held, debits equal the fall', async () => {
    const sql = ds as unknown as Sql;
    const tenants = await Promise.all(
      [false, true].map(async (zeroRated) => {
        const start = zeroRated ? 0 : 1_000_000_000;
        const id = await createTenant(sql, { plan: 'premium', entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: start, zeroRated });
        const token = await e2e.issue(id);
        const clients = gateways.map((g) => new OpenAI({ baseURL: `${g.url}/v1`, apiKey: token, defaultHeaders: { 'x-service-product-key': 'core' }, maxRetries: 0, timeout: 30_000 }));
        return { id, start, zeroRated, clients };
      }),
    );
    const relkind = async () => (await ds.query(`SELECT relkind FROM pg_class WHERE oid = 'usage_ledger'::regclass`))[0].relkind as string;
    expect(await relkind()).toBe('r');

    const outcomes: Array<{ tenant: number; status: number; requestId: string | null; cost?: number; error?: string; at: number }> = [];
    let migrating = true;
    let n = 0;
    const caller = async () => {
      while (migrating) {
        const i = n++;
        const t = i % 2;
        const client = tenants[t]!.clients[i % gateways.length]!;
        const stream = i % 3 === 0;
        try {
          if (stream) {
            const { data, response } = await client.chat.completions
              .create({ model: 'fake-chat-1', max_tokens: 16, messages: [{ role: 'user', content: `hello ${i}` }], stream: true, stream_options: { include_usage: true } })
              .withResponse();
            let usage: OpenAI.CompletionUsage | null | undefined;
            for await (const chunk of data) usage = chunk.usage ?? usage;
            outcomes.push({ tenant: t, status: response.status, requestId: response.headers.get('x-request-id'), cost: usage ? cost(usage.prompt_tokens, usage.completion_tokens) : undefined, at: performance.now() });
          } else {
            const { data, response } = await client.chat.completions.create({ model: 'fake-chat-1', max_tokens: 16, messages: [{ role: 'user', content: `hello ${i}` }] }).withResponse();
            outcomes.push({ tenant: t, status: response.status, requestId: response.headers.get('x-request-id'), cost: data.usage ? cost(data.usage.prompt_tokens, data.usage.completion_tokens) : undefined, at: performance.now() });
          }
        } catch (err) {
          outcomes.push({ tenant: t, status: (err as { status?: number }).status ?? 0, requestId: null, error: String(err), at: performance.now() });
        }
      }
    };
    const callers = Array.from({ length: IN_FLIGHT }, caller);
    await new Promise((r) => setTimeout(r, 500));
    const runner = ds.createQueryRunner();
    const from = performance.now();
    await new Partitions().up(runner);
    const to = performance.now();
    await runner.release();
    await new Promise((r) => setTimeout(r, 500));
    migrating = false;
    await Promise.all(callers);
    expect(await relkind()).toBe('p');

    const ids = tenants.map((t) => t.id);
    await waitFor(async () => Number((await ds.query(`SELECT count(*) AS n FROM usage_ledger WHERE tenant_id = ANY($1) AND status = 'pending'`, [ids]))[0].n) === 0, 10_000).catch(() => undefined);
    expect(outcomes.filter((o) => o.status !== 200)).toEqual([]);
    // Served before, during and after the migration.
    expect([outcomes.some((o) => o.at < from), outcomes.some((o) => o.at > from && o.at < to), outcomes.some((o) => o.at > to)]).toEqual([true, true, true]);
    for (const [i, t] of tenants.entries()) {
      const rows = await ledgerRows(sql, t.id);
      const mine = outcomes.filter((o) => o.tenant === i);
      const byRequest = new Map(rows.map((r) => [r.request_id, r]));
      expect(rows.length).toBe(mine.length);
      for (const o of mine) {
        const row = byRequest.get(o.requestId ?? '');
        expect({ requestId: o.requestId, status: row?.status, debit: Number(row?.debit) }).toEqual({ requestId: o.requestId, status: 'succeeded', debit: t.zeroRated ? 0 : o.cost });
      }
      const debited = rows.reduce((sum, r) => sum + Number(r.debit), 0);
      expect(await balanceOf(sql, t.id)).toEqual({ balance: t.start - debited, reserved: 0 });
    }
  }, 120_000);
});
