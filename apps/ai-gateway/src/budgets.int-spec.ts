import OpenAI, { APIError } from 'openai';
import type { DataSource } from 'typeorm';
import { BudgetsRepository, type BudgetKind } from '@flagship/ledger';
import { DATA_SOURCE } from '@flagship/persistence';
import type { RunningApp } from '@flagship/service-kit';
import type { FakeModelUpstream } from '@flagship/testing';
import type { GatewayPipeline } from './gateway.pipeline';
import { createTenant, type GatewayIntegration, type IssueToken, ledgerRows, startGatewayIntegration, TEST_ISSUER as ISSUER } from './testing/gateway.fixture';

/**
 * Budgets per OAuth client and per product key through the real `openai` SDK and the started gateway:
 * requests are served until the month's budget no longer covers one, then refused with 402
 * `budget_exceeded` before the provider is called, whatever credit the tenant has left.
 */


describe('ai-gateway budgets through the openai SDK', () => {
  let fake: FakeModelUpstream;
  let issue: IssueToken;
  let gw: RunningApp & { pipeline: GatewayPipeline };
  let ds: DataSource;

  let setup: GatewayIntegration | undefined;

  beforeAll(async () => {
    setup = await startGatewayIntegration();
    ({ fake, issue, gw } = setup);
    ds = gw.app.get<DataSource>(DATA_SOURCE);
  });

  afterAll(() => setup?.close());

  const sdk = async (tenantId: string, clientId: string) =>
    new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: await issue(tenantId, ['core'], clientId), defaultHeaders: { 'x-service-product-key': 'core' }, maxRetries: 0, timeout: 10_000 });
  const chat = { model: 'fake-chat-1', messages: [{ role: 'user' as const, content: 'hello there world' }], max_tokens: 10 };
  const setBudget = (tenant: string, kind: BudgetKind, scopeId: string, cap: number) => ds.transaction((m) => new BudgetsRepository(ds).set(m, tenant, kind, scopeId, cap));
  const failure = (call: Promise<unknown>) => call.then(() => undefined, (e: unknown) => e);

  /** What one `chat` request holds while in flight and then debits, read off an unbudgeted tenant's row. */
  async function priceOfChat(): Promise<{ estimate: number; debit: number }> {
    const tenant = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: 1_000_000 });
    await (await sdk(tenant, 'ffc_budgetProbe')).chat.completions.create(chat);
    await gw.pipeline.drain();
    const [row] = await ledgerRows(ds, tenant);
    return { estimate: Number(row!.reserved), debit: Number(row!.debit) };
  }

  /** Requests one after another (each settled before the next) until one fails; what each did. */
  async function spendUntilRefused(clients: OpenAI[], max: number): Promise<{ served: number; refusal: unknown; callsBefore: number; callsAfter: number }> {
    for (let i = 0; i < max; i++) {
      const callsBefore = fake.calls.chat;
      const outcome = await failure(clients[i % clients.length]!.chat.completions.create(chat));
      await gw.pipeline.drain();
      if (outcome !== undefined) return { served: i, refusal: outcome, callsBefore, callsAfter: fake.calls.chat };
    }
    throw new Error(`no refusal after ${max} requests`);
  }

  /** How many requests a cap admits one after another: each needs cap - spent >= its estimate, and spends its debit. */
  const admittedUnder = (cap: number, p: { estimate: number; debit: number }) => {
    let spent = 0;
    let n = 0;
    while (cap - spent >= p.estimate) {
      spent += p.debit;
      n++;
    }
    return n;
  };

  it("a client's budget: served until it no longer covers a request, then 402 budget_exceeded naming it, the provider not called; its other clients go on", async () => {
    const p = await priceOfChat();
    expect(p.estimate).toBeGreaterThan(p.debit);
    const tenant = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: 1_000_000 });
    // Admits three (the estimate, and two debits spent under it), refuses the fourth.
    const cap = p.estimate + 2 * p.debit;
    await setBudget(tenant, 'client', 'ffc_budgetCapped', cap);
    const capped = await sdk(tenant, 'ffc_budgetCapped');

    const run = await spendUntilRefused([capped], 20);
    expect(run.served).toBe(admittedUnder(cap, p));
    expect(run.served).toBe(3);
    expect(run.refusal).toBeInstanceOf(APIError);
    expect(run.refusal).toMatchObject({ status: 402, code: 'budget_exceeded', type: 'insufficient_quota' });
    const message = (run.refusal as APIError).message;
    expect(message).toContain('OAuth client ffc_budgetCapped');
    expect(message).toContain(`${ISSUER}/console/billing`);
    expect(run.callsAfter).toBe(run.callsBefore);
    // Streaming is refused alike; the refused requests left no row.
    await expect(capped.chat.completions.create({ ...chat, stream: true })).rejects.toMatchObject({ status: 402, code: 'budget_exceeded' });
    expect(await ledgerRows(ds, tenant)).toHaveLength(run.served);

    const [month] = await ds.query<Array<{ spent: string; reserved: string }>>(
      `SELECT spent, reserved FROM budget_months WHERE tenant_id = $1 AND scope_kind = 'client' AND scope_id = 'ffc_budgetCapped'`,
      [tenant],
    );
    expect(month).toEqual({ spent: String(run.served * p.debit), reserved: '0' });
    expect(Number(month!.spent)).toBeLessThanOrEqual(cap);

    // Another client of the tenant has no budget: served.
    await expect((await sdk(tenant, 'ffc_budgetFree')).chat.completions.create(chat)).resolves.toBeDefined();
    // Raised, the capped client is served again.
    await setBudget(tenant, 'client', 'ffc_budgetCapped', cap + p.estimate);
    await expect(capped.chat.completions.create(chat)).resolves.toBeDefined();
  });

  it("a product key's budget is shared by every client sending the key: 402 budget_exceeded naming the product key", async () => {
    const p = await priceOfChat();
    const tenant = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: 1_000_000 });
    const cap = p.estimate + 3 * p.debit;
    await setBudget(tenant, 'product', 'core', cap);
    const run = await spendUntilRefused([await sdk(tenant, 'ffc_budgetOne'), await sdk(tenant, 'ffc_budgetTwo')], 20);
    expect(run.served).toBe(admittedUnder(cap, p));
    expect(run.served).toBe(4);
    expect(run.refusal).toMatchObject({ status: 402, code: 'budget_exceeded' });
    expect((run.refusal as APIError).message).toContain('product key core');
    expect(run.callsAfter).toBe(run.callsBefore);
    const rows = await ledgerRows(ds, tenant);
    expect(new Set(rows.map((r) => r.client_id))).toEqual(new Set(['ffc_budgetOne', 'ffc_budgetTwo']));
  });

  it('concurrent requests of one client never spend past its budget', async () => {
    const p = await priceOfChat();
    const tenant = await createTenant(ds, { entitlements: [{ productKey: 'core', tier: 'enterprise' }], balance: 1_000_000 });
    // One estimate and one debit: two at most, one after the other; fewer when they overlap.
    const cap = p.estimate + p.debit;
    await setBudget(tenant, 'client', 'ffc_budgetBurst', cap);
    const client = await sdk(tenant, 'ffc_budgetBurst');
    const outcomes = await Promise.all(Array.from({ length: 20 }, () => failure(client.chat.completions.create(chat))));
    await gw.pipeline.drain();
    const served = outcomes.filter((o) => o === undefined).length;
    expect(served).toBeGreaterThanOrEqual(1);
    expect(served).toBeLessThanOrEqual(2);
    expect(outcomes.filter((o) => o !== undefined).every((o) => o instanceof APIError && o.code === 'budget_exceeded')).toBe(true);
    const [month] = await ds.query<Array<{ spent: string; reserved: string }>>(
      `SELECT spent, reserved FROM budget_months WHERE tenant_id = $1 AND scope_kind = 'client' AND scope_id = 'ffc_budgetBurst'`,
      [tenant],
    );
    expect(month).toEqual({ spent: String(served * p.debit), reserved: '0' });
  });
});
