import { randomUUID } from 'node:crypto';
import { describeAgreement, testDataSource } from '@flagship/testing';
import { inFakeTransaction, type InTransaction } from '@flagship/persistence/testing';
import { type BillingSyncRepository, type LedgerEntry, SqlBillingSyncRepository } from './billing-sync.repository';
import { FakeBillingSyncRepository } from './billing-sync.repository.fake';

/**
 * The same cases against the real repository (Postgres) and its in-memory twin, so the billing
 * sync's unit tests, which run on the fake, prove what the real one does.
 */
describe('BillingSyncRepository: the fake agrees with Postgres', () => {
  const pg = testDataSource();

  interface Subject {
    repo: BillingSyncRepository;
    tx: InTransaction;
    tenant: (name: string) => Promise<string>;
    adminEntitlement: (tenantId: string, productKey: string, tier: string) => Promise<void>;
    plan: (tenantId: string) => Promise<[string, string]>;
    entitlements: (tenantId: string) => Promise<Array<[string, string, string]>>;
    ledger: (tenantId: string) => Promise<Array<[string, string, number]>>;
  }

  const real = (): Subject => ({
    repo: new SqlBillingSyncRepository(pg.ds),
    tx: pg.inTransaction,
    tenant: async (name) => ((await pg.ds.query(`INSERT INTO tenants (name, primary_email) VALUES ($1, 'ops@acme.test') RETURNING id`, [name])) as Array<{ id: string }>)[0].id,
    adminEntitlement: async (t, p, tier) => void (await pg.ds.query(`INSERT INTO entitlements (tenant_id, product_key, tier, source) VALUES ($1, $2, $3, 'admin')`, [t, p, tier])),
    plan: async (t) => {
      const [r] = (await pg.ds.query(`SELECT plan, subscription_status FROM tenants WHERE id = $1`, [t])) as Array<{ plan: string; subscription_status: string }>;
      return [r.plan, r.subscription_status];
    },
    entitlements: async (t) =>
      ((await pg.ds.query(`SELECT product_key, tier, source FROM entitlements WHERE tenant_id = $1 ORDER BY product_key`, [t])) as Array<Record<string, string>>).map((r) => [r['product_key'], r['tier'], r['source']]),
    ledger: async (t) =>
      ((await pg.ds.query(`SELECT kind, stripe_object_id, amount FROM billing_ledger WHERE tenant_id = $1 ORDER BY kind, stripe_object_id`, [t])) as Array<Record<string, string>>).map((r) => [
        r['kind'],
        r['stripe_object_id'],
        Number(r['amount']),
      ]),
  });
  const fake = (): Subject => {
    const repo = new FakeBillingSyncRepository();
    return {
      repo,
      tx: inFakeTransaction,
      tenant: async (name) => repo.seedTenant(randomUUID(), name).id,
      adminEntitlement: async (tenantId, productKey, tier) => void repo.entitlements.push({ tenantId, productKey, tier, source: 'admin' }),
      plan: async (t) => [repo.tenants.get(t)!.plan, repo.tenants.get(t)!.subscriptionStatus],
      entitlements: async (t) =>
        repo.entitlements
          .filter((e) => e.tenantId === t)
          .sort((a, b) => (a.productKey < b.productKey ? -1 : 1))
          .map((e) => [e.productKey, e.tier, e.source]),
      ledger: async (t) =>
        repo.ledger
          .filter((e) => e.tenantId === t)
          .sort((a, b) => (a.kind + a.stripeObjectId < b.kind + b.stripeObjectId ? -1 : 1))
          .map((e) => [e.kind, e.stripeObjectId, e.amount]),
    };
  };

  describeAgreement({ Postgres: real, 'the fake': fake }, (subject) => {
    let s: Subject;
    beforeEach(() => {
      s = subject();
    });

    it('names a tenant, or none', async () => {
      const t = await s.tenant('Acme');
      expect(await s.repo.tenant(t)).toEqual({ id: t, name: 'Acme', primaryEmail: 'ops@acme.test' });
      expect(await s.tx((m) => s.repo.tenant(t, m))).toEqual({ id: t, name: 'Acme', primaryEmail: 'ops@acme.test' });
      expect(await s.repo.tenant(randomUUID())).toBeNull();
    });

    it("sets a tenant's plan and status, no one else's", async () => {
      const [t, other] = [await s.tenant('A'), await s.tenant('B')];
      expect(await s.plan(t)).toEqual(['free', 'active']);
      await s.tx((m) => s.repo.setPlan(m, t, 'premium', 'past_due'));
      await s.tx((m) => s.repo.setPlan(m, t, 'premium', 'past_due'));
      expect(await s.plan(t)).toEqual(['premium', 'past_due']);
      expect(await s.plan(other)).toEqual(['free', 'active']);
    });

    it("grants and revokes a plan's entitlements; one an admin granted is neither changed nor revoked", async () => {
      const t = await s.tenant('A');
      await s.adminEntitlement(t, 'insights', 'enterprise_plus_suite');
      await s.tx(async (m) => {
        await s.repo.grantPlanEntitlement(m, t, 'core', 'enterprise');
        await s.repo.grantPlanEntitlement(m, t, 'insights', 'enterprise');
      });
      expect(await s.entitlements(t)).toEqual([
        ['core', 'enterprise', 'plan'],
        ['insights', 'enterprise_plus_suite', 'admin'],
      ]);
      await s.tx((m) => s.repo.grantPlanEntitlement(m, t, 'core', 'enterprise_plus_suite'));
      await s.tx(async (m) => {
        await s.repo.revokePlanEntitlement(m, t, 'insights');
        await s.repo.revokePlanEntitlement(m, t, 'forms');
      });
      expect(await s.entitlements(t)).toEqual([
        ['core', 'enterprise_plus_suite', 'plan'],
        ['insights', 'enterprise_plus_suite', 'admin'],
      ]);
      await s.tx((m) => s.repo.revokePlanEntitlement(m, t, 'core'));
      expect(await s.entitlements(t)).toEqual([['insights', 'enterprise_plus_suite', 'admin']]);
    });

    it('records a Stripe object in the ledger once per kind', async () => {
      const t = await s.tenant('A');
      const entry = (kind: LedgerEntry['kind'], id: string, amount: number): LedgerEntry => ({
        tenantId: t,
        productKey: 'core',
        kind,
        stripeObjectId: id,
        stripeSubscriptionId: null,
        amount,
        currency: 'usd',
        credits: 0,
        occurredAt: new Date('2026-01-01T00:00:00Z'),
      });
      const id = `in_${randomUUID()}`;
      expect(await s.tx((m) => s.repo.addLedgerEntry(m, entry('invoice_payment_failed', id, 4900)))).toBe(true);
      expect(await s.tx((m) => s.repo.addLedgerEntry(m, entry('invoice_paid', id, 4900)))).toBe(true);
      expect(await s.tx((m) => s.repo.addLedgerEntry(m, entry('invoice_paid', id, 1)))).toBe(false);
      expect(await s.ledger(t)).toEqual([
        ['invoice_paid', id, 4900],
        ['invoice_payment_failed', id, 4900],
      ]);
    });

    it('takes a lock inside a transaction', async () => {
      await expect(s.tx((m) => s.repo.lock(m, 'subscription:sub_1'))).resolves.toBeUndefined();
    });
  });
});
