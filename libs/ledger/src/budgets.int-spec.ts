/**
 * Budgets per OAuth client and per product key, as the ledger's own statements hold them: admission
 * in the reservation's single statement (RESERVE_ONE and the batch RESERVE alike), the month row's
 * `reserved` moved to `spent` by the settlement, given back by a release or the reconciler, and,
 * under many concurrent requests from two pools, never more admitted than a budget's cap.
 */
import type { DataSource } from 'typeorm';
import { createDataSource } from '@flagship/persistence';
import { createTestDatabase, seededRandom, type TestDatabase } from '@flagship/testing';
import { BudgetsRepository } from './budgets.repository';
import { aReservation, aSettlement, balanceOf, budgetMonthOf, createTenant, insertBudget, ledgerRows } from './testing/ledger.fixture';
import type { Reservation, ReserveOutcome, Settlement } from './usage-ledger';
import { UsageLedgerRepository } from './usage-ledger.repository';
import { UsageReconcilerRepository } from './usage-reconciler.repository';

jest.setTimeout(60_000);

let db: TestDatabase;
let replicas: DataSource[];
let ds: DataSource;
let repo: UsageLedgerRepository;
let budgets: BudgetsRepository;

beforeAll(async () => {
  db = await createTestDatabase();
  replicas = [createDataSource({ url: db.url, poolSize: 4 }), createDataSource({ url: db.url, poolSize: 4 })];
  for (const r of replicas) await r.initialize();
  ds = replicas[0]!;
  repo = new UsageLedgerRepository(ds);
  budgets = new BudgetsRepository(ds);
});

afterAll(async () => {
  for (const r of replicas ?? []) await r.destroy();
  await db?.drop();
});

const setBudget = (tenant: string, kind: 'client' | 'product', scopeId: string, cap: number) => ds.transaction((m) => budgets.set(m, tenant, kind, scopeId, cap));

describe('budgets at admission (real Postgres)', () => {
  /** Each reservation alone (RESERVE_ONE), or all together (RESERVE): both must judge alike. */
  const shapes: Array<[string, (rs: Reservation[]) => Promise<ReserveOutcome[]>]> = [
    ['one at a time', async (rs) => {
      const out: ReserveOutcome[] = [];
      for (const r of rs) out.push(...(await repo.admit([r])));
      return out;
    }],
    ['in one batch', (rs) => repo.admit(rs)],
  ];

  it.each(shapes)('%s: a client budget admits while its month covers the estimate, then refuses with budget_client; other clients are not limited', async (_shape, admit) => {
    const tenant = await createTenant(ds, { balance: 10_000 });
    await setBudget(tenant, 'client', 'ffc_capped', 250);
    const capped = (estimate: number) => aReservation(tenant, estimate, { clientId: 'ffc_capped' });
    // (Within one batch, as for the credit, a refused request's estimate still counts against those after it.)
    const rs = [capped(100), capped(100), aReservation(tenant, 100, { clientId: 'ffc_free' }), capped(100), capped(100)];
    expect(await admit(rs)).toEqual(['admitted', 'admitted', 'admitted', 'budget_client', 'budget_client']);
    expect(await budgetMonthOf(ds, tenant, 'client', 'ffc_capped')).toMatchObject({ spent: 0, reserved: 200 });
    expect(await balanceOf(ds, tenant)).toEqual({ balance: 10_000, reserved: 300 });
    const rows = new Map((await ledgerRows(ds, tenant)).map((r) => [r.id, r as unknown as Record<string, unknown>]));
    expect(rows.has(rs[3]!.id)).toBe(false);
    expect(rows.get(rs[0]!.id)).toMatchObject({ client_budget_held: true, product_budget_held: false });
    expect(rows.get(rs[0]!.id)!['budget_month']).not.toBeNull();
    expect(rows.get(rs[2]!.id)).toMatchObject({ client_budget_held: false, product_budget_held: false, budget_month: null });
  });

  it.each(shapes)('%s: a product-key budget is shared by every client sending that key, and says budget_product', async (_shape, admit) => {
    const tenant = await createTenant(ds, { balance: 10_000 });
    await setBudget(tenant, 'product', 'core', 150);
    const rs = [aReservation(tenant, 100, { clientId: 'ffc_a' }), aReservation(tenant, 100, { clientId: 'ffc_b' }), aReservation(tenant, 100, { productKey: 'other' })];
    expect(await admit(rs)).toEqual(['admitted', 'budget_product', 'admitted']);
    expect(await budgetMonthOf(ds, tenant, 'product', 'core')).toMatchObject({ spent: 0, reserved: 100 });
  });

  it.each(shapes)('%s: credit short says insufficient_credits before any budget; a budget of 0 refuses all; zero-rated requests ignore budgets', async (_shape, admit) => {
    const tenant = await createTenant(ds, { balance: 50 });
    await setBudget(tenant, 'client', 'ffc_ledgerSpec', 0);
    const zero = aReservation(tenant, 100, { zeroRatedReason: 'internal_suite:suite_a' });
    expect(await admit([aReservation(tenant, 10), aReservation(tenant, 100), zero])).toEqual(['budget_client', 'insufficient_credits', 'admitted']);
    expect(await budgetMonthOf(ds, tenant, 'client', 'ffc_ledgerSpec')).toMatchObject({ spent: 0, reserved: 0 });
    expect((await ledgerRows(ds, tenant)).map((r) => r.id)).toEqual([zero.id]);
  });

  it.each(shapes)('%s: a new month starts at zero: its row is made by the first request, which is then admitted', async (_shape, admit) => {
    const tenant = await createTenant(ds, { balance: 10_000 });
    // Set without the running month's row (as at a month's first request), and last month spent to the cap.
    await insertBudget(ds, tenant, 'client', 'ffc_ledgerSpec', 100);
    await insertBudget(ds, tenant, 'product', 'core', 100);
    await ds.query(
      `INSERT INTO budget_months (tenant_id, scope_kind, scope_id, month, spent)
       VALUES ($1, 'client', 'ffc_ledgerSpec', (date_trunc('month', now() AT TIME ZONE 'UTC') - interval '1 month')::date, 100)`,
      [tenant],
    );
    expect(await admit([aReservation(tenant, 60), aReservation(tenant, 60)])).toEqual(['admitted', 'budget_client']);
    expect(await budgetMonthOf(ds, tenant, 'client', 'ffc_ledgerSpec')).toEqual({ spent: 0, reserved: 60, exists: true });
    expect(await budgetMonthOf(ds, tenant, 'product', 'core')).toEqual({ spent: 0, reserved: 60, exists: true });
  });
  it('a batch mixing budgeted, unbudgeted and zero-rated requests: each decided once, whether or not the repository knew the budget', async () => {
    const tenant = await createTenant(ds, { balance: 10_000 });
    await setBudget(tenant, 'client', 'ffc_capped', 250);
    const ledger = new UsageLedgerRepository(ds);
    const capped = (estimate: number) => aReservation(tenant, estimate, { clientId: 'ffc_capped' });
    const zero = aReservation(tenant, 100, { zeroRatedReason: 'internal_suite:suite_a' });
    // Unknown to the repository: RESERVE admits the unbudgeted two, RESERVE_BUDGETED the capped two.
    expect(await ledger.admit([capped(100), aReservation(tenant, 100), zero, capped(100)])).toEqual(['admitted', 'admitted', 'admitted', 'admitted']);
    // Known now: the capped requests go straight to RESERVE_BUDGETED. The 50 is refused although 50 are
    // left: within a batch a refused request's estimate still counts against those after it, as for the credit.
    expect(await ledger.admit([capped(100), aReservation(tenant, 100), capped(50)])).toEqual(['budget_client', 'admitted', 'budget_client']);
    expect(await budgetMonthOf(ds, tenant, 'client', 'ffc_capped')).toMatchObject({ spent: 0, reserved: 200 });
    expect(await balanceOf(ds, tenant)).toEqual({ balance: 10_000, reserved: 400 });
    expect(await ledgerRows(ds, tenant)).toHaveLength(5);
  });

  it('one repository follows a budget set, then removed, between two requests of the same client (its hint never decides)', async () => {
    const tenant = await createTenant(ds, { balance: 10_000 });
    const ledger = new UsageLedgerRepository(ds);
    expect(await ledger.admit([aReservation(tenant, 10)])).toEqual(['admitted']);
    await setBudget(tenant, 'client', 'ffc_ledgerSpec', 5);
    expect(await ledger.admit([aReservation(tenant, 10)])).toEqual(['budget_client']);
    expect(await ledger.admit([aReservation(tenant, 10)])).toEqual(['budget_client']);
    expect(await budgets.remove(tenant, 'client', 'ffc_ledgerSpec')).toBe(true);
    expect(await ledger.admit([aReservation(tenant, 10)])).toEqual(['admitted']);
    expect(await ledger.admit([aReservation(tenant, 10)])).toEqual(['admitted']);
    expect(await balanceOf(ds, tenant)).toEqual({ balance: 10_000, reserved: 30 });
  });
});

describe('budgets at completion (real Postgres)', () => {
  it('a settlement moves the estimate out of reserved and the debit into spent; a release gives the estimate back', async () => {
    const tenant = await createTenant(ds, { balance: 10_000 });
    await setBudget(tenant, 'client', 'ffc_ledgerSpec', 1000);
    await setBudget(tenant, 'product', 'core', 1000);
    const [a, b, c] = [aReservation(tenant, 100), aReservation(tenant, 200), aReservation(tenant, 300)];
    expect(await repo.reserve([a, b])).toEqual([true, true]);
    expect(await repo.reserve([c])).toEqual([true]);
    expect(await budgetMonthOf(ds, tenant, 'product', 'core')).toMatchObject({ spent: 0, reserved: 600 });
    expect(await repo.settle([aSettlement(a, 40), aSettlement(c, 300)])).toEqual([true, true]);
    expect(await repo.release([b])).toEqual([true]);
    for (const [kind, id] of [['client', 'ffc_ledgerSpec'], ['product', 'core']] as const) {
      expect(await budgetMonthOf(ds, tenant, kind, id)).toMatchObject({ spent: 340, reserved: 0 });
    }
    expect(await balanceOf(ds, tenant)).toEqual({ balance: 9660, reserved: 0 });
  });

  it('settles in the month the request was reserved in, whatever budgets were set or removed since', async () => {
    const tenant = await createTenant(ds, { balance: 10_000 });
    await setBudget(tenant, 'client', 'ffc_ledgerSpec', 1000);
    const held = aReservation(tenant, 100);
    const unheld = aReservation(tenant, 100, { clientId: 'ffc_other', productKey: 'later' });
    expect(await repo.reserve([held, unheld])).toEqual([true, true]);
    // The budget removed, and one set on the product key after the request was admitted.
    expect(await budgets.remove(tenant, 'client', 'ffc_ledgerSpec')).toBe(true);
    await setBudget(tenant, 'product', 'later', 1000);
    expect(await repo.settle([aSettlement(held, 70), aSettlement(unheld, 70)])).toEqual([true, true]);
    expect(await budgetMonthOf(ds, tenant, 'client', 'ffc_ledgerSpec')).toMatchObject({ spent: 70, reserved: 0 });
    expect(await budgetMonthOf(ds, tenant, 'product', 'later')).toMatchObject({ spent: 0, reserved: 0 });

    // Reserved last month (its row and month moved back), settled now: last month's row is charged.
    await setBudget(tenant, 'client', 'ffc_ledgerSpec', 1000);
    const late = aReservation(tenant, 100);
    expect(await repo.reserve([late])).toEqual([true]);
    const lastMonth = `(date_trunc('month', now() AT TIME ZONE 'UTC') - interval '1 month')::date`;
    await ds.query(`UPDATE budget_months SET month = ${lastMonth} WHERE tenant_id = $1 AND scope_kind = 'client'`, [tenant]);
    await ds.query(`INSERT INTO budget_months (tenant_id, scope_kind, scope_id, month) VALUES ($1, 'client', 'ffc_ledgerSpec', date_trunc('month', now() AT TIME ZONE 'UTC')::date)`, [tenant]);
    await ds.query(`UPDATE usage_ledger SET budget_month = ${lastMonth} WHERE tenant_id = $1 AND id = $2`, [tenant, late.id]);
    expect(await repo.settle([aSettlement(late, 90)])).toEqual([true]);
    const [{ month }] = await ds.query<Array<{ month: string }>>(`SELECT to_char(${lastMonth}, 'YYYY-MM-DD') AS month`);
    expect(await budgetMonthOf(ds, tenant, 'client', 'ffc_ledgerSpec', month)).toMatchObject({ spent: 160, reserved: 0 });
    expect(await budgetMonthOf(ds, tenant, 'client', 'ffc_ledgerSpec')).toMatchObject({ spent: 0, reserved: 0 });
  });

  it("a budget set mid-month starts from what its client or product key already spent this month; a cap change keeps the figures", async () => {
    const tenant = await createTenant(ds, { balance: 10_000 });
    const [now, lastMonth, other, inFlight] = [aReservation(tenant, 100), aReservation(tenant, 100), aReservation(tenant, 100, { clientId: 'ffc_other', productKey: 'other' }), aReservation(tenant, 100)];
    expect(await repo.reserve([now, lastMonth, other, inFlight])).toEqual([true, true, true, true]);
    expect(await repo.settle([aSettlement(now, 70), aSettlement(lastMonth, 40), aSettlement(other, 30)])).toEqual([true, true, true]);
    await ds.query(`UPDATE usage_ledger SET created_at = date_trunc('month', now()) - interval '1 day' WHERE tenant_id = $1 AND id = $2`, [tenant, lastMonth.id]);
    const set = await setBudget(tenant, 'client', 'ffc_ledgerSpec', 1000);
    expect(set).toMatchObject({ spent: 70, reserved: 0, monthlyCap: 1000 });
    expect((await setBudget(tenant, 'product', 'core', 1000)).spent).toBe(70);
    // The request in flight when the budget was set is not held by it: its settlement leaves the budget alone.
    expect(await repo.settle([aSettlement(inFlight, 20)])).toEqual([true]);
    expect((await setBudget(tenant, 'client', 'ffc_ledgerSpec', 500))).toMatchObject({ spent: 70, reserved: 0, monthlyCap: 500 });
  });

  it("the reconciler's abandon gives an abandoned row's budget hold back, and charges it what it charges the balance", async () => {
    const tenant = await createTenant(ds, { balance: 10_000 });
    await setBudget(tenant, 'client', 'ffc_ledgerSpec', 1000);
    const [called, notCalled] = [aReservation(tenant, 100), aReservation(tenant, 50)];
    expect(await repo.reserve([called, notCalled])).toEqual([true, true]);
    // The gateway sent one to its provider and died: that one is charged its estimate, the other nothing.
    await repo.markUpstreamCalled([called]);
    const batch = await ds.transaction((m) => new UsageReconcilerRepository().abandonStale(m, 0, 100));
    expect(batch.settled).toBeGreaterThanOrEqual(2);
    expect(await budgetMonthOf(ds, tenant, 'client', 'ffc_ledgerSpec')).toMatchObject({ spent: 100, reserved: 0 });
    expect(await balanceOf(ds, tenant)).toEqual({ balance: 9_900, reserved: 0 });
  });
});

/**
 * The budget invariants, as ledger.invariants.int-spec.ts states the balance's: two pools reserve
 * (alone and in batches), settle and release at once, the reconciler abandons rows under them, and
 * a watcher reads the month rows throughout.
 * - spent + reserved never passes the cap at any instant, so spent never ends above the cap plus one
 *   request's cost (a request debits at most its estimate: not above the cap at all here);
 * - nothing stays held, and each budget's spent equals the debits of the rows it held, exactly;
 * - the balance's own invariants hold beside them.
 */
describe('budget invariants (real Postgres, two pools)', () => {
  const MAX_ESTIMATE = 300;

  it.each([1, 2, 3])('seed %i: spent + reserved never above the cap, nothing held at the end, spent equals the debits', async (seed) => {
    const rnd = seededRandom(seed);
    const pick = (n: number) => Math.floor(rnd() * n);
    const start = 200_000;
    const tenant = await createTenant(ds, { balance: start });
    const caps = { clientA: 4_000, core: 5_000 };
    await setBudget(tenant, 'client', 'ffc_budgetA', caps.clientA);
    await setBudget(tenant, 'product', 'core', caps.core);
    const repos = replicas.map((r) => new UsageLedgerRepository(r));
    const reconciler = new UsageReconcilerRepository();
    const admittedIds: string[] = [];
    const releasedIds: string[] = [];
    const stats = { admitted: 0, released: 0, byClient: 0, byProduct: 0, credit: 0 };
    let running = true;

    const reservation = (): Reservation =>
      aReservation(tenant, 1 + pick(MAX_ESTIMATE), {
        clientId: rnd() < 0.6 ? 'ffc_budgetA' : 'ffc_budgetB',
        productKey: rnd() < 0.7 ? 'core' : 'other',
        zeroRatedReason: rnd() < 0.05 ? 'internal_suite:insights' : null,
      });
    const settlement = (r: Reservation): Settlement => {
      const failed = rnd() < 0.2;
      return aSettlement(r, failed ? 0 : pick(r.estimate + 1), { status: failed ? 'failed' : 'succeeded', errorCode: failed ? 'provider_error' : null });
    };
    const replica = async (ledger: UsageLedgerRepository, turns: number) => {
      for (let i = 0; i < turns; i++) {
        const batch = Array.from({ length: 1 + pick(4) }, reservation);
        const outcomes = await ledger.admit(batch);
        const held = batch.filter((_, k) => outcomes[k] === 'admitted');
        admittedIds.push(...held.map((r) => r.id));
        stats.admitted += held.length;
        stats.byClient += outcomes.filter((o) => o === 'budget_client').length;
        stats.byProduct += outcomes.filter((o) => o === 'budget_product').length;
        stats.credit += outcomes.filter((o) => o === 'insufficient_credits').length;
        const toRelease = held.filter(() => rnd() < 0.15);
        const toSettle = held.filter((r) => !toRelease.includes(r)).map(settlement);
        if (toRelease.length > 0) {
          const gone = await ledger.release(toRelease);
          stats.released += gone.filter(Boolean).length;
          releasedIds.push(...toRelease.filter((_, k) => gone[k]).map((r) => r.id));
        }
        if (toSettle.length > 0) await ledger.settle(toSettle);
      }
    };
    const reconcile = async () => {
      while (running) {
        await replicas[0]!.transaction((m) => reconciler.abandonStale(m, 0, 5));
        await new Promise((r) => setTimeout(r, 3));
      }
    };
    const over: string[] = [];
    let looks = 0;
    const watch = async () => {
      while (running) {
        const [a, core] = await Promise.all([budgetMonthOf(replicas[1]!, tenant, 'client', 'ffc_budgetA'), budgetMonthOf(replicas[1]!, tenant, 'product', 'core')]);
        looks++;
        if (a.spent + a.reserved > caps.clientA) over.push(`client ${JSON.stringify(a)}`);
        if (core.spent + core.reserved > caps.core) over.push(`product ${JSON.stringify(core)}`);
        if (a.reserved < 0 || core.reserved < 0) over.push('reserved below 0');
      }
    };

    const background = [reconcile(), watch()];
    await Promise.all(repos.flatMap((ledger) => [replica(ledger, 40), replica(ledger, 40), replica(ledger, 40)]));
    running = false;
    await Promise.all(background);

    const rows = await ledgerRows(ds, tenant);
    const debits = (held: (r: (typeof rows)[number] & Record<string, unknown>) => boolean) =>
      rows.filter((r) => held(r as (typeof rows)[number] & Record<string, unknown>)).reduce((sum, r) => sum + Number(r.debit), 0);
    const a = await budgetMonthOf(ds, tenant, 'client', 'ffc_budgetA');
    const core = await budgetMonthOf(ds, tenant, 'product', 'core');
    const end = await balanceOf(ds, tenant);

    const present = new Set(rows.map((r) => r.id));
    const released = new Set(releasedIds);
    expect(over).toEqual([]);
    expect(a.reserved).toBe(0);
    expect(core.reserved).toBe(0);
    expect(a.spent).toBeLessThanOrEqual(caps.clientA + MAX_ESTIMATE);
    expect(core.spent).toBeLessThanOrEqual(caps.core + MAX_ESTIMATE);
    expect(a.spent).toBe(debits((r) => r['client_budget_held'] === true && r.client_id === 'ffc_budgetA'));
    expect(core.spent).toBe(debits((r) => r['product_budget_held'] === true && r.product_key === 'core'));
    // Every billable row of a budgeted scope was held by that budget (none was set or removed mid-run).
    expect(rows.filter((r) => !r.zero_rated && r.client_id === 'ffc_budgetA' && (r as unknown as Record<string, unknown>)['client_budget_held'] !== true)).toEqual([]);
    expect(end.reserved).toBe(0);
    expect(rows.reduce((sum, r) => sum + Number(r.debit), 0)).toBe(start - end.balance);
    // Each admitted request has its row, unless its release deleted it (and said so).
    expect(admittedIds.filter((id) => !present.has(id) && !released.has(id))).toEqual([]);
    expect(rows).toHaveLength(stats.admitted - stats.released);
    // The run did what it is about: both budgets refused requests, while credit was left; the reconciler raced.
    expect(stats.byClient).toBeGreaterThan(0);
    expect(stats.byProduct).toBeGreaterThan(0);
    expect(stats.credit).toBe(0);
    expect(rows.some((r) => r.status === 'abandoned')).toBe(true);
    expect(looks).toBeGreaterThan(10);
  });
});
