import { randomUUID } from 'node:crypto';
import { describeAgreement, testDataSource } from '@flagship/testing';
import { aReservation, aSettlement, balanceOf, budgetMonthOf, createTenant, FakeUsageLedgerRepository, insertBudget, ledgerRows } from './testing';
import type { RouteAttribution, UsageLedger } from './usage-ledger';
import { UsageLedgerRepository } from './usage-ledger.repository';

type Kind = 'client' | 'product';

/** A ledger and the world around it: tenants, budgets and alerts set up, and what the tables hold. */
interface Subject {
  ledger: UsageLedger;
  /** A tenant with a balance row of `balance` (none when undefined). */
  tenant(balance?: number): Promise<string>;
  budget(tenantId: string, kind: Kind, scopeId: string, cap: number): Promise<void>;
  alert(tenantId: string, threshold: number): Promise<void>;
  balance(tenantId: string): Promise<{ balance: number; reserved: number }>;
  budgetMonth(tenantId: string, kind: Kind, scopeId: string): Promise<{ spent: number; reserved: number }>;
  /** The row's flag attribution (flag key, version, variation, context kind, reason); undefined: no such row. */
  attribution(tenantId: string, id: string): Promise<RouteAttribution | null | undefined>;
  /** The row's "upstream called" stamp; undefined: no such row. */
  upstreamCalled(tenantId: string, id: string): Promise<boolean | undefined>;
}

/**
 * The gateway's ledger port, the same cases on UsageLedgerRepository over Postgres and on the
 * in-memory twin the gateway's step specs run on: admission on credit and budgets, settlement,
 * release, the "upstream called" stamp and low-balance crossings.
 */
describe('the usage ledger: the fake agrees with Postgres', () => {
  const pg = testDataSource();

  const real = (): Subject => ({
    ledger: new UsageLedgerRepository(pg.ds),
    tenant: (balance) => createTenant(pg.ds, { balance }),
    budget: (t, kind, scopeId, cap) => insertBudget(pg.ds, t, kind, scopeId, cap),
    alert: async (t, threshold) => void (await pg.ds.query(`INSERT INTO low_balance_alerts (tenant_id, threshold, armed) VALUES ($1, $2, true)`, [t, threshold])),
    balance: (t) => balanceOf(pg.ds, t),
    budgetMonth: async (t, kind, scopeId) => {
      const { spent, reserved } = await budgetMonthOf(pg.ds, t, kind, scopeId);
      return { spent, reserved };
    },
    upstreamCalled: async (t, id) => {
      const row = (await ledgerRows(pg.ds, t)).find((r) => r.id === id);
      return row === undefined ? undefined : row.upstream_called_at !== null;
    },
    attribution: async (t, id) => {
      const [row] = await pg.ds.query<Array<{ flag_key: string | null; flag_version: number | null; variation: string | null; context_kind: string | null; route_reason: string | null }>>(
        'SELECT flag_key, flag_version, variation, context_kind, route_reason FROM usage_ledger WHERE tenant_id = $1 AND id = $2',
        [t, id],
      );
      if (row === undefined) return undefined;
      return row.flag_key === null ? null : { flagKey: row.flag_key, flagVersion: row.flag_version, variation: row.variation, contextKind: row.context_kind!, reason: row.route_reason };
    },
  });

  const fake = (): Subject => {
    const ledger = new FakeUsageLedgerRepository();
    return {
      ledger,
      tenant: async (balance) => {
        const id = randomUUID();
        if (balance !== undefined) ledger.tenant(id, balance);
        return id;
      },
      budget: async (t, kind, scopeId, cap) => void ledger.budget(t, kind, scopeId, cap),
      alert: async (t, threshold) => void ledger.alerts.set(t, threshold),
      balance: async (t) => ({ ...(ledger.balances.get(t) ?? { balance: 0, reserved: 0 }) }),
      budgetMonth: async (t, kind, scopeId) => {
        const b = ledger.budgets.get(FakeUsageLedgerRepository.budgetKey(t, kind, scopeId));
        return { spent: b?.spent ?? 0, reserved: b?.reserved ?? 0 };
      },
      upstreamCalled: async (_t, id) => ledger.rows.get(id)?.upstreamCalled,
      attribution: async (_t, id) => {
        const row = ledger.rows.get(id);
        return row === undefined ? undefined : (row.reservation.route ?? null);
      },
    };
  };

  describeAgreement({ Postgres: real, 'the fake': fake }, (subject) => {
    let s: Subject;
    beforeEach(() => {
      s = subject();
    });

    it('admits while the credit left covers the estimate (at least 1), in batch order, and holds it', async () => {
      const t = await s.tenant(1000);
      expect(await s.ledger.admit([aReservation(t, 600), aReservation(t, 400), aReservation(t, 1)])).toEqual(['admitted', 'admitted', 'insufficient_credits']);
      expect(await s.balance(t)).toEqual({ balance: 1000, reserved: 1000 });
      expect(await s.ledger.admit([aReservation(t, 0)])).toEqual(['insufficient_credits']);
    });

    it('admits one request alone as a batch would, and refuses a tenant with no balance row', async () => {
      const t = await s.tenant(100);
      expect(await s.ledger.admit([aReservation(t, 100)])).toEqual(['admitted']);
      expect(await s.ledger.admit([aReservation(t, 1)])).toEqual(['insufficient_credits']);
      expect(await s.ledger.admit([aReservation(await s.tenant(), 1)])).toEqual(['insufficient_credits']);
    });

    it('admits zero-rated requests always, holding nothing, and settles them at no charge', async () => {
      const broke = await s.tenant();
      const r = aReservation(broke, 0, { zeroRatedReason: 'tenant_zero_rated' });
      expect(await s.ledger.admit([r])).toEqual(['admitted']);
      const t = await s.tenant(10);
      const batch = [aReservation(t, 0, { zeroRatedReason: 'internal_product' }), aReservation(t, 5)];
      expect(await s.ledger.admit(batch)).toEqual(['admitted', 'admitted']);
      expect(await s.ledger.settle([aSettlement(batch[0]!, 70), aSettlement(batch[1]!, 5)])).toEqual([true, true]);
      expect(await s.balance(t)).toEqual({ balance: 5, reserved: 0 });
    });

    it("refuses what a client's or a product key's budget does not cover, after the credit, and holds the budgets it admits under", async () => {
      const t = await s.tenant(10_000);
      await s.budget(t, 'client', 'ffc_ledgerSpec', 500);
      await s.budget(t, 'product', 'insights', 300);
      expect(await s.ledger.admit([aReservation(t, 400)])).toEqual(['admitted']);
      expect(await s.ledger.admit([aReservation(t, 200)])).toEqual(['budget_client']);
      expect(await s.ledger.admit([aReservation(t, 100)])).toEqual(['admitted']);
      expect(await s.ledger.admit([aReservation(t, 50_000)])).toEqual(['insufficient_credits']);
      const other = { clientId: 'ffc_other', productKey: 'insights' };
      expect(await s.ledger.admit([aReservation(t, 301, other)])).toEqual(['budget_product']);
      expect(await s.ledger.admit([aReservation(t, 300, other)])).toEqual(['admitted']);
      expect(await s.budgetMonth(t, 'client', 'ffc_ledgerSpec')).toEqual({ spent: 0, reserved: 500 });
      expect(await s.budgetMonth(t, 'product', 'insights')).toEqual({ spent: 0, reserved: 300 });
      expect(await s.balance(t)).toEqual({ balance: 10_000, reserved: 800 });
    });

    it('settles a pending row once: its hold released, its debit charged to the balance and its budgets', async () => {
      const t = await s.tenant(1000);
      await s.budget(t, 'client', 'ffc_ledgerSpec', 900);
      const [a, b] = [aReservation(t, 300), aReservation(t, 200)];
      expect(await s.ledger.admit([a, b])).toEqual(['admitted', 'admitted']);
      expect(await s.ledger.settleBatch([aSettlement(a, 120), aSettlement(b, 260, { status: 'failed' })])).toEqual({ completed: [true, true], crossings: [] });
      expect(await s.balance(t)).toEqual({ balance: 1000 - 380, reserved: 0 });
      expect(await s.budgetMonth(t, 'client', 'ffc_ledgerSpec')).toEqual({ spent: 380, reserved: 0 });
      expect(await s.ledger.settle([aSettlement(a, 999)])).toEqual([false]);
      expect(await s.ledger.settle([aSettlement(aReservation(t, 1), 1)])).toEqual([false]);
      expect(await s.balance(t)).toEqual({ balance: 620, reserved: 0 });
    });

    it("names the tenant: another tenant's settlement, release or stamp of a row does nothing", async () => {
      const [t, u] = [await s.tenant(1000), await s.tenant(1000)];
      const r = aReservation(t, 100);
      await s.ledger.admit([r]);
      expect(await s.ledger.settle([aSettlement(r, 50, { tenantId: u })])).toEqual([false]);
      expect(await s.ledger.release([{ id: r.id, tenantId: u }])).toEqual([false]);
      await s.ledger.markUpstreamCalled([{ id: r.id, tenantId: u }]);
      expect(await s.upstreamCalled(t, r.id)).toBe(false);
      expect(await s.balance(t)).toEqual({ balance: 1000, reserved: 100 });
    });

    it('releases a pending row: gone, its hold back; a released or settled row is not released', async () => {
      const t = await s.tenant(1000);
      await s.budget(t, 'product', 'core', 1000);
      const [a, b] = [aReservation(t, 300), aReservation(t, 200)];
      await s.ledger.admit([a, b]);
      await s.ledger.settle([aSettlement(b, 150)]);
      expect(await s.ledger.release([a, b])).toEqual([true, false]);
      expect(await s.upstreamCalled(t, a.id)).toBeUndefined();
      expect(await s.ledger.release([a])).toEqual([false]);
      expect(await s.ledger.settle([aSettlement(a, 10)])).toEqual([false]);
      expect(await s.balance(t)).toEqual({ balance: 850, reserved: 0 });
      expect(await s.budgetMonth(t, 'product', 'core')).toEqual({ spent: 150, reserved: 0 });
    });

    it('stamps "upstream called" on pending rows only, one or a batch', async () => {
      const t = await s.tenant(1000);
      const [a, b, c] = [aReservation(t, 10), aReservation(t, 10), aReservation(t, 10)];
      await s.ledger.admit([a, b, c]);
      await s.ledger.settle([aSettlement(c, 10)]);
      await s.ledger.markUpstreamCalled([a]);
      expect(await s.upstreamCalled(t, a.id)).toBe(true);
      expect(await s.upstreamCalled(t, b.id)).toBe(false);
      await s.ledger.markUpstreamCalled([b, c]);
      expect([await s.upstreamCalled(t, b.id), await s.upstreamCalled(t, c.id)]).toEqual([true, false]);
      await s.ledger.markUpstreamCalled([]);
    });

    it('marks a debit above the reservation overrun and charges it as it is', async () => {
      const t = await s.tenant(1000);
      const r = aReservation(t, 100);
      await s.ledger.admit([r]);
      expect(await s.ledger.settle([aSettlement(r, 250)])).toEqual([true]);
      expect(await s.balance(t)).toEqual({ balance: 750, reserved: 0 });
    });

    it('records one low-balance crossing when a settlement takes the balance to the threshold, and none after', async () => {
      const t = await s.tenant(1000);
      await s.alert(t, 700);
      const [a, b] = [aReservation(t, 300), aReservation(t, 300)];
      await s.ledger.admit([a, b]);
      expect((await s.ledger.settleBatch([aSettlement(a, 299)])).crossings).toEqual([]);
      const { crossings } = await s.ledger.settleBatch([aSettlement(b, 1)]);
      expect(crossings.map((c) => [c.tenantId, c.threshold, c.balance])).toEqual([[t, 700, 700]]);
      const c = aReservation(t, 100);
      await s.ledger.admit([c]);
      expect((await s.ledger.settleBatch([aSettlement(c, 100)])).crossings).toEqual([]);
    });

    it('records the flag that chose the model on the row, batch or one, and none for an unbound request', async () => {
      const t = await s.tenant(10_000);
      const route = (variation: string | null, reason: string | null): RouteAttribution => ({ flagKey: 'model-rollout', flagVersion: 100_003, variation, contextKind: 'multi', reason });
      const one = aReservation(t, 10, { route: route('treatment', null) });
      const [a, b, plain] = [aReservation(t, 10, { route: route(null, 'flag_not_json') }), aReservation(t, 10, { route: route('control', 'spend_cap') }), aReservation(t, 10)];
      expect(await s.ledger.admit([one])).toEqual(['admitted']);
      expect(await s.ledger.admit([a, b, plain])).toEqual(['admitted', 'admitted', 'admitted']);
      expect(await Promise.all([one, a, b, plain].map((r) => s.attribution(t, r.id)))).toEqual([route('treatment', null), route(null, 'flag_not_json'), route('control', 'spend_cap'), null]);
    });

    it("admits a variation under its monthly cap while its rows (pending at their hold, completed at their debit) leave room; other variations, product keys and tenants do not count", async () => {
      const t = await s.tenant(1_000_000);
      const other = await s.tenant(1_000_000);
      const capped = (estimate: number, over: { variation?: string; productKey?: string; tenantId?: string } = {}) =>
        aReservation(over.tenantId ?? t, estimate, { productKey: over.productKey ?? 'core', route: { flagKey: 'model-rollout', flagVersion: 1, variation: over.variation ?? 'treatment', contextKind: 'multi', reason: null } });
      const first = capped(600);
      expect(await s.ledger.admitUnderCap(first, 1000)).toBe('admitted');
      expect(await s.ledger.admitUnderCap(capped(401), 1000)).toBe('spend_cap');
      // Settled at 100: the month used 100, so 900 fits (and nothing of the refusal was held).
      await s.ledger.settleBatch([aSettlement(first, 100)]);
      expect(await s.balance(t)).toEqual({ balance: 999_900, reserved: 0 });
      expect(await s.ledger.admitUnderCap(capped(900), 1000)).toBe('admitted');
      expect(await s.ledger.admitUnderCap(capped(1), 1000)).toBe('spend_cap');
      expect(await s.ledger.admitUnderCap(capped(900, { variation: 'control' }), 1000)).toBe('admitted');
      expect(await s.ledger.admitUnderCap(capped(900, { productKey: 'insights' }), 1000)).toBe('admitted');
      expect(await s.ledger.admitUnderCap(capped(900, { tenantId: other }), 1000)).toBe('admitted');
      // The credit and budgets still decide within the cap.
      await s.budget(t, 'product', 'studio', 50);
      expect(await s.ledger.admitUnderCap(capped(60, { productKey: 'studio' }), 1000)).toBe('budget_product');
      expect(await s.ledger.admitUnderCap(capped(2_000_000, { productKey: 'forms' }), 10_000_000)).toBe('insufficient_credits');
    });
  });
});
