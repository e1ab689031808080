import { randomUUID } from 'node:crypto';
import { type BudgetKind, type Budgets, BudgetsRepository, UsageLedgerRepository } from '@flagship/ledger';
import { aReservation, aSettlement, createTenant } from '@flagship/ledger/testing';
import { inFakeTransaction, type InTransaction } from '@flagship/persistence/testing';
import { describeAgreement, testDataSource } from '@flagship/testing';
import { FakeBudgets } from './budgets.repository.fake';

const THIS_MONTH = new Date().toISOString().slice(0, 7);

/**
 * The same cases against the real repository (Postgres) and its in-memory twin, so the budgets unit
 * spec, which runs on the twin, proves what the real one does. `debit` is the gateway's own
 * reservation and settlement on Postgres; `spend` writes the running month's row as they leave it.
 */
describe('Budgets: the fake agrees with Postgres', () => {
  const pg = testDataSource();

  type Subject = {
    budgets: Budgets;
    tx: InTransaction;
    /** A tenant with credit to spend. */
    tenant: () => Promise<string>;
    spend: (tenantId: string, kind: BudgetKind, scopeId: string, spent: number, reserved: number) => Promise<void>;
    /** A request of `clientId` with `productKey` admitted and settled this month, debiting `debit` (within any cap). */
    debit: (tenantId: string, clientId: string, productKey: string, debit: number) => Promise<void>;
  };

  const real = (): Subject => ({
    budgets: new BudgetsRepository(pg.ds),
    tx: pg.inTransaction,
    tenant: () => createTenant(pg.ds, { balance: 1_000_000 }),
    spend: async (tenantId, kind, scopeId, spent, reserved) =>
      void (await pg.ds.query(
        `INSERT INTO budget_months (tenant_id, scope_kind, scope_id, month, spent, reserved) VALUES ($1, $2, $3, date_trunc('month', now() AT TIME ZONE 'UTC')::date, $4, $5)
         ON CONFLICT (tenant_id, scope_kind, scope_id, month) DO UPDATE SET spent = EXCLUDED.spent, reserved = EXCLUDED.reserved`,
        [tenantId, kind, scopeId, spent, reserved],
      )),
    debit: async (tenantId, clientId, productKey, debit) => {
      const ledger = new UsageLedgerRepository(pg.ds);
      const r = aReservation(tenantId, debit, { clientId, productKey });
      expect(await ledger.admit([r])).toEqual(['admitted']);
      expect(await ledger.settle([aSettlement(r, debit)])).toEqual([true]);
    },
  });
  const fake = (): Subject => {
    const budgets = new FakeBudgets();
    return {
      budgets,
      tx: inFakeTransaction,
      tenant: async () => randomUUID(),
      spend: async (tenantId, kind, scopeId, spent, reserved) => budgets.spend(tenantId, kind, scopeId, { spent, reserved }),
      debit: async (tenantId, clientId, productKey, debit) => budgets.debit({ tenantId, clientId, productKey, debit }),
    };
  };

  describeAgreement({ Postgres: real, 'the fake': fake }, (subject) => {
    let s: Subject;
    beforeEach(() => {
      s = subject();
    });
    const set = (tenantId: string, kind: BudgetKind, scopeId: string, cap: number) => s.tx((m) => s.budgets.set(m, tenantId, kind, scopeId, cap));

    it('sets a budget with the running month at zero, reads it back, and changes its cap keeping what the month spent', async () => {
      const t = await s.tenant();
      expect(await s.budgets.get(t, 'client', 'ffc_a')).toBeNull();
      const made = await set(t, 'client', 'ffc_a', 5_000);
      expect(made).toEqual({ kind: 'client', scopeId: 'ffc_a', monthlyCap: 5_000, spent: 0, reserved: 0, month: THIS_MONTH, createdAt: expect.stringMatching(/Z$/), updatedAt: made.createdAt });
      expect(await s.budgets.get(t, 'client', 'ffc_a')).toEqual(made);
      await s.spend(t, 'client', 'ffc_a', 1_200, 300);
      const changed = await set(t, 'client', 'ffc_a', 7_000);
      expect(changed).toMatchObject({ monthlyCap: 7_000, spent: 1_200, reserved: 300, createdAt: made.createdAt });
      expect(changed.updatedAt >= made.updatedAt).toBe(true);
      // The same scope id under the other kind is another budget.
      expect(await s.budgets.get(t, 'product', 'ffc_a')).toBeNull();
    });

    it("another tenant's budgets are missing: not read, not listed, not removed", async () => {
      const [t, other] = [await s.tenant(), await s.tenant()];
      await set(t, 'product', 'core', 10);
      expect(await s.budgets.get(other, 'product', 'core')).toBeNull();
      expect(await s.budgets.list(other, { limit: 10 })).toEqual([]);
      expect(await s.budgets.remove(other, 'product', 'core')).toBe(false);
      expect(await s.budgets.get(t, 'product', 'core')).toMatchObject({ monthlyCap: 10 });
    });

    it('a budget set mid-month starts from what its client or product key spent this month; a removed one set again goes on from its month', async () => {
      const t = await s.tenant();
      await s.debit(t, 'ffc_a', 'core', 100);
      await s.debit(t, 'ffc_b', 'core', 40);
      await s.debit(t, 'ffc_a', 'other', 7);
      expect(await set(t, 'client', 'ffc_a', 1_000)).toMatchObject({ spent: 107, reserved: 0 });
      expect(await set(t, 'product', 'core', 1_000)).toMatchObject({ spent: 140, reserved: 0 });
      expect(await set(t, 'client', 'ffc_c', 1_000)).toMatchObject({ spent: 0, reserved: 0 });
      // Spent under the budgets that cover it now.
      await s.debit(t, 'ffc_a', 'core', 30);
      expect(await s.budgets.get(t, 'client', 'ffc_a')).toMatchObject({ spent: 137 });
      expect(await s.budgets.get(t, 'product', 'core')).toMatchObject({ spent: 170 });
      expect(await s.budgets.remove(t, 'client', 'ffc_a')).toBe(true);
      expect(await s.budgets.remove(t, 'client', 'ffc_a')).toBe(false);
      expect(await s.budgets.get(t, 'client', 'ffc_a')).toBeNull();
      expect(await set(t, 'client', 'ffc_a', 50)).toMatchObject({ monthlyCap: 50, spent: 137 });
    });

    it('lists oldest first in keyset pages of `limit` after the previous page\'s last position', async () => {
      const t = await s.tenant();
      // Kinds and ids in the order they are set, so a tie of instants orders them alike.
      for (const [kind, id] of [['client', 'ffc_a'], ['client', 'ffc_b'], ['product', 'core'], ['product', 'suite']] as const) await set(t, kind, id, 1);
      const all = await s.budgets.list(t, { limit: 10 });
      expect(all.map((b) => `${b.kind}:${b.scopeId}`)).toEqual(['client:ffc_a', 'client:ffc_b', 'product:core', 'product:suite']);
      const first = await s.budgets.list(t, { limit: 3 });
      expect(first).toEqual(all.slice(0, 3));
      const last = first[1]!;
      expect(await s.budgets.list(t, { limit: 3, after: { at: last.createdAt, kind: last.kind, scopeId: last.scopeId } })).toEqual(all.slice(2));
    });
  });
});
