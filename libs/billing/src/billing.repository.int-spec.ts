import { randomUUID } from 'node:crypto';
import { describeAgreement, testDataSource } from '@flagship/testing';
import { inFakeTransaction, type InTransaction } from '@flagship/persistence/testing';
import { type BillingRepository, type BillingSubscription, SqlBillingRepository } from './billing.repository';
import { FakeBillingRepository } from './billing.repository.fake';

/**
 * The same cases against the real repository (Postgres) and its in-memory twin, so the unit tests
 * that run on the fake (billing-worker's sync and metering) prove what the real one does.
 */
describe('BillingRepository: the fake agrees with Postgres', () => {
  const pg = testDataSource();

  interface Subject {
    repo: BillingRepository;
    tx: InTransaction;
    tenant: (primaryEmail: string) => Promise<string>;
    member: (tenantId: string, email: string, role: 'admin' | 'editor' | 'viewer', signedIn: boolean) => Promise<void>;
  }

  const real = (): Subject => ({
    repo: new SqlBillingRepository(pg.ds),
    tx: pg.inTransaction,
    tenant: async (email) => ((await pg.ds.query(`INSERT INTO tenants (name, primary_email) VALUES ('T', $1) RETURNING id`, [email])) as Array<{ id: string }>)[0].id,
    member: async (tenantId, email, role, signedIn) => {
      const [{ id }] = (await pg.ds.query(`INSERT INTO users (idp_subject, email) VALUES ($1, $2) RETURNING id`, [signedIn ? `s-${randomUUID()}` : `pending:${email.toLowerCase()}`, email])) as Array<{ id: string }>;
      await pg.ds.query(`INSERT INTO memberships (tenant_id, user_id, role) VALUES ($1, $2, $3)`, [tenantId, id, role]);
    },
  });
  const fake = (): Subject => {
    const repo = new FakeBillingRepository();
    return {
      repo,
      tx: inFakeTransaction,
      tenant: async (email) => {
        const id = randomUUID();
        repo.primaryEmails.set(id, email);
        return id;
      },
      member: async (tenantId, email, role, signedIn) => void repo.members.push({ tenantId, email, role, signedIn }),
    };
  };

  describeAgreement({ Postgres: real, 'the fake': fake }, (subject) => {
    let s: Subject;
    let a: string;
    let b: string;
    const cus = () => `cus_${randomUUID().slice(0, 12)}`;
    beforeEach(async () => {
      s = subject();
      a = await s.tenant('ops@a.test');
      b = await s.tenant('ops@b.test');
    });

    it('one customer per tenant and product key, found by its Stripe id; the first recorded holds', async () => {
      const [first, second] = [cus(), cus()];
      expect(await s.repo.insertCustomer(a, 'core', first)).toEqual({ tenantId: a, productKey: 'core', stripeCustomerId: first });
      expect(await s.repo.insertCustomer(a, 'core', second)).toEqual({ tenantId: a, productKey: 'core', stripeCustomerId: first });
      expect(await s.repo.customer(a, 'core')).toEqual({ tenantId: a, productKey: 'core', stripeCustomerId: first });
      expect(await s.repo.customer(a, 'insights')).toBeNull();
      expect(await s.repo.customerByStripeId(first)).toEqual({ tenantId: a, productKey: 'core', stripeCustomerId: first });
      expect(await s.repo.customerByStripeId(second)).toBeNull();
      // A Stripe customer is one tenant's: recording it for another leaves that one without.
      await expect(s.repo.insertCustomer(b, 'core', first)).rejects.toThrow(/vanished/);
    });

    it("a customer's usage subscription: recorded, read, and forgotten only by its own id", async () => {
      await s.repo.insertCustomer(a, 'core', cus());
      expect(await s.repo.usageSubscriptionId(a, 'core')).toBeNull();
      await s.tx((m) => s.repo.setUsageSubscriptionId(m, a, 'core', 'sub_usage_1'));
      expect(await s.repo.usageSubscriptionId(a, 'core')).toBe('sub_usage_1');
      await s.tx((m) => s.repo.clearUsageSubscriptionId(m, a, 'sub_other'));
      await s.tx((m) => s.repo.clearUsageSubscriptionId(m, b, 'sub_usage_1'));
      expect(await s.repo.usageSubscriptionId(a, 'core')).toBe('sub_usage_1');
      await s.tx((m) => s.repo.clearUsageSubscriptionId(m, a, 'sub_usage_1'));
      expect(await s.repo.usageSubscriptionId(a, 'core')).toBeNull();
    });

    it('the current plan subscription is the newest live one, else the newest; a re-read replaces it; another tenant cannot take it over', async () => {
      const customer = cus();
      const sub = (id: string, status: string, created: number, over: Partial<BillingSubscription> = {}): BillingSubscription => ({
        stripeSubscriptionId: id,
        tenantId: a,
        productKey: 'core',
        stripeCustomerId: customer,
        stripeItemId: `si_${id}`,
        priceId: 'price_std',
        plan: 'standard',
        status,
        currentPeriodStart: new Date('2026-01-01T00:00:00.000Z'),
        currentPeriodEnd: new Date('2026-02-01T00:00:00.000Z'),
        cancelAtPeriodEnd: false,
        stripeCreated: created,
        ...over,
      });
      const [old, live, ended] = [`sub_${randomUUID()}`, `sub_${randomUUID()}`, `sub_${randomUUID()}`];
      await s.tx((m) => s.repo.upsertSubscription(m, sub(old, 'active', 100)));
      await s.tx((m) => s.repo.upsertSubscription(m, sub(live, 'past_due', 200)));
      await s.tx((m) => s.repo.upsertSubscription(m, sub(ended, 'canceled', 300)));
      expect(await s.repo.currentSubscription(a, 'core')).toEqual(sub(live, 'past_due', 200));
      await s.tx((m) => s.repo.upsertSubscription(m, sub(live, 'canceled', 999, { plan: 'premium', priceId: 'price_pre', cancelAtPeriodEnd: true })));
      expect(await s.repo.currentSubscription(a, 'core')).toEqual(sub(old, 'active', 100));
      // All ended: the newest by Stripe's creation, as first read (the re-read's 999 is not taken).
      await s.tx((m) => s.repo.upsertSubscription(m, sub(old, 'canceled', 100)));
      expect(await s.repo.currentSubscription(a, 'core')).toEqual(sub(ended, 'canceled', 300));
      await s.tx((m) => s.repo.upsertSubscription(m, sub(old, 'trialing', 100)));
      expect(await s.repo.currentSubscription(a, 'core')).toEqual(sub(old, 'trialing', 100));
      await s.tx((m) => s.repo.upsertSubscription(m, sub(old, 'active', 100, { tenantId: b, plan: 'premium' })));
      expect(await s.repo.currentSubscription(a, 'core')).toMatchObject({ stripeSubscriptionId: old, status: 'trialing', plan: 'standard' });
      expect(await s.repo.currentSubscription(b, 'core')).toBeNull();
      expect(await s.repo.currentSubscription(a, 'insights')).toBeNull();
    });

    it("Checkout Sessions: recorded once, read only as the recording tenant's", async () => {
      const id = `cs_${randomUUID()}`;
      const session = { stripeSessionId: id, tenantId: a, productKey: 'core', kind: 'credits' as const, amount: 2500, currency: 'usd', planId: null, createdBy: null };
      await s.repo.recordCheckoutSession(session);
      await s.repo.recordCheckoutSession({ ...session, amount: 99_999 });
      expect(await s.repo.checkoutSession(a, id)).toEqual(session);
      expect(await s.repo.checkoutSession(b, id)).toBeNull();
      expect(await s.repo.checkoutSession(a, 'cs_unknown')).toBeNull();
    });

    it("billing's state: absent, set, replaced", async () => {
      const key = `k-${randomUUID()}`;
      expect(await s.repo.state(key)).toBeNull();
      await s.repo.setState(key, 'one');
      await s.tx((m) => s.repo.setState(key, 'two', m));
      expect(await s.repo.state(key)).toBe('two');
    });

    it("the billing e-mail: the primary e-mail once a member signed in with it, else a signed-in admin's, else a signed-in member's; never a pending one", async () => {
      expect(await s.repo.billingEmail(a)).toBeNull();
      await s.member(a, 'ops@a.test', 'viewer', false);
      expect(await s.repo.billingEmail(a)).toBeNull();
      await s.member(a, 'ed@a.test', 'editor', true);
      expect(await s.repo.billingEmail(a)).toBe('ed@a.test');
      await s.member(a, 'boss@a.test', 'admin', true);
      expect(await s.repo.billingEmail(a)).toBe('boss@a.test');
      await s.member(b, 'OPS@b.test', 'viewer', true);
      await s.member(b, 'boss@b.test', 'admin', true);
      expect(await s.repo.billingEmail(b)).toBe('OPS@b.test');
    });
  });
});
