import { randomUUID } from 'node:crypto';
import { type CreditBalances, CreditsRepository, type LowBalanceAlerts, type LowBalanceCrossing, LowBalanceRepository, UsageLedgerRepository } from '@flagship/ledger';
import { aReservation, aSettlement, createTenant } from '@flagship/ledger/testing';
import { inFakeTransaction, type InTransaction } from '@flagship/persistence/testing';
import { describeAgreement, testDataSource } from '@flagship/testing';
import { FakeLowBalanceAlerts } from './low-balance.repository.fake';

/** Newest first, as the repository promises: crossed, then id. */
const newestFirst = (rows: LowBalanceCrossing[]): LowBalanceCrossing[] =>
  [...rows].sort((a, b) => (a.crossedAt !== b.crossedAt ? (a.crossedAt < b.crossedAt ? 1 : -1) : a.id < b.id ? 1 : a.id > b.id ? -1 : 0));

/**
 * The same cases against the real repositories (Postgres) and their in-memory twins, so the credits
 * and low-balance unit specs, which run on the twins, prove what the real ones do. `settle` is the
 * gateway's own reservation and settlement on Postgres (the statements that record crossings).
 */
describe('CreditBalances and LowBalanceAlerts: the fakes agree with Postgres', () => {
  const pg = testDataSource();

  type Subject = {
    credits: CreditBalances;
    alerts: LowBalanceAlerts;
    tx: InTransaction;
    /** A tenant never granted credits. */
    tenant: () => Promise<string>;
    /** What the gateway holds on the balance for requests in flight. */
    hold: (tenantId: string, reserved: number) => Promise<void>;
    /** A request admitted and settled, debiting `debit`. */
    settle: (tenantId: string, debit: number) => Promise<void>;
  };

  const real = (): Subject => ({
    credits: new CreditsRepository(pg.ds),
    alerts: new LowBalanceRepository(pg.ds),
    tx: pg.inTransaction,
    tenant: () => createTenant(pg.ds),
    hold: async (tenantId, reserved) => void (await pg.ds.query('UPDATE credit_balances SET reserved = $2 WHERE tenant_id = $1', [tenantId, reserved])),
    settle: async (tenantId, debit) => {
      const ledger = new UsageLedgerRepository(pg.ds);
      const r = aReservation(tenantId, debit);
      expect(await ledger.admit([r])).toEqual(['admitted']);
      expect(await ledger.settle([aSettlement(r, debit)])).toEqual([true]);
    },
  });
  const fake = (): Subject => {
    const alerts = new FakeLowBalanceAlerts();
    return {
      credits: alerts.credits,
      alerts,
      tx: inFakeTransaction,
      tenant: async () => randomUUID(),
      hold: async (tenantId, reserved) => alerts.credits.hold(tenantId, reserved),
      settle: async (tenantId, debit) => alerts.settle(tenantId, debit),
    };
  };

  describeAgreement({ Postgres: real, 'the fake': fake }, (subject) => {
    let s: Subject;
    beforeEach(() => {
      s = subject();
    });
    const grant = (tenantId: string, amount: number) => s.tx((m) => s.credits.grantCredits(m, tenantId, { amount, reason: 'top-up', grantedBy: 'spec' }));

    it('a tenant never granted credits has no balance; grants add up (a negative one takes back), each answering the new balance; another tenant is untouched', async () => {
      const [t, other] = [await s.tenant(), await s.tenant()];
      expect(await s.credits.balanceOf(t)).toBeNull();
      expect(await grant(t, 5_000_000)).toEqual({ balance: 5_000_000, reserved: 0 });
      await s.hold(t, 1_234);
      expect(await grant(t, 250_000)).toEqual({ balance: 5_250_000, reserved: 1_234 });
      expect(await grant(t, -5_000_000)).toEqual({ balance: 250_000, reserved: 1_234 });
      expect(await s.credits.balanceOf(t)).toEqual({ balance: 250_000, reserved: 1_234 });
      expect(await s.credits.balanceOf(other)).toBeNull();
    });

    it('no alert until one is set; set is armed only while the balance is above the threshold; remove says whether there was one', async () => {
      const t = await s.tenant();
      expect(await s.alerts.get(t)).toBeNull();
      expect(await s.alerts.remove(t)).toBe(false);
      // No balance row counts as 0: a threshold of 0 is not armed.
      expect(await s.alerts.set(t, 0)).toMatchObject({ threshold: 0, armed: false, updatedAt: expect.stringMatching(/Z$/) });
      await grant(t, 1_000);
      expect(await s.alerts.set(t, 999)).toMatchObject({ threshold: 999, armed: true });
      expect(await s.alerts.set(t, 1_000)).toMatchObject({ threshold: 1_000, armed: false });
      expect(await s.alerts.get(t)).toMatchObject({ threshold: 1_000, armed: false });
      expect(await s.alerts.remove(t)).toBe(true);
      expect(await s.alerts.get(t)).toBeNull();
    });

    it('a settlement at or below an armed threshold records one crossing and disarms; only a grant above it re-arms', async () => {
      const [t, other] = [await s.tenant(), await s.tenant()];
      await grant(t, 1_000);
      await grant(other, 1_000);
      await s.alerts.set(t, 300);
      await s.alerts.set(other, 300);
      await s.settle(t, 500);
      expect(await s.alerts.crossings(t, { limit: 10 })).toEqual([]);
      await s.settle(t, 300);
      expect(await s.alerts.get(t)).toMatchObject({ threshold: 300, armed: false });
      await s.settle(t, 50);
      // A grant leaving the balance at or below the threshold does not re-arm; one above it does.
      await grant(t, 150);
      expect(await s.alerts.get(t)).toMatchObject({ armed: false });
      await grant(t, 1);
      expect(await s.alerts.get(t)).toMatchObject({ armed: true });
      await s.settle(t, 101);
      const crossings = await s.alerts.crossings(t, { limit: 10 });
      expect(crossings.map((c) => [c.threshold, c.balance]).sort()).toEqual([[300, 200], [300, 200]]);
      expect(crossings).toEqual(newestFirst(crossings));
      expect(crossings[0]).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), tenantId: t, threshold: 300, balance: 200, crossedAt: expect.stringMatching(/Z$/) });
      expect(await s.alerts.crossings(other, { limit: 10 })).toEqual([]);
      expect(await s.alerts.get(other)).toMatchObject({ armed: true });
      // Removing the threshold keeps its crossings.
      await s.alerts.remove(t);
      expect(await s.alerts.crossings(t, { limit: 10 })).toHaveLength(2);
    });

    it('crossings page by keyset: `limit` rows after the position of the previous page\'s last', async () => {
      const t = await s.tenant();
      await grant(t, 1_000);
      await s.alerts.set(t, 900);
      for (const [debit, back] of [[200, 200], [300, 300], [400, 400]]) {
        await s.settle(t, debit!);
        await grant(t, back!);
      }
      const all = await s.alerts.crossings(t, { limit: 10 });
      expect(all.map((c) => c.balance).sort()).toEqual([600, 700, 800]);
      const first = await s.alerts.crossings(t, { limit: 2 });
      expect(first).toEqual(all.slice(0, 2));
      expect(await s.alerts.crossings(t, { limit: 2, after: { at: first[1]!.crossedAt, id: first[1]!.id } })).toEqual(all.slice(2));
    });
  });
});
