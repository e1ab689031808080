import { Budgets } from '@flagship/ledger';
import { encodeCursor } from '@flagship/service-kit';
import { FakeOAuthClientsRepository } from '../oauth/oauth-clients.repository.fake';
import { OAuthClientsService } from '../oauth/oauth-clients.service';
import { resolveOAuthFeatureOptions } from '../oauth/oauth-feature.options';
import { Quotas, type QuotaSettings } from '../quotas/quotas';
import { FakeQuotasRepository } from '../quotas/quotas.repository.fake';
import { inlineTransactions } from '../testing/inline-transactions';
import { problemOf } from '../testing/problem-of';
import { FakeBudgets } from './budgets.repository.fake';
import { budgetCursor, BudgetsService } from './budgets.service';

const TENANT = '00000000-0000-4000-8000-0000000000a1';
const OTHER_TENANT = '00000000-0000-4000-8000-0000000000b2';
const USER = '00000000-0000-4000-8000-0000000000c3';
const QUOTA = 3;

describe('BudgetsService', () => {
  let budgets: FakeBudgets;
  let clients: OAuthClientsService;
  let service: BudgetsService;

  beforeEach(() => {
    budgets = new FakeBudgets();
    clients = new OAuthClientsService(new FakeOAuthClientsRepository(), { revoke: async () => undefined }, resolveOAuthFeatureOptions({ oauth: { issuer: 'https://i.test' }, publicBaseUrl: 'https://i.test' }));
    const quotas = new Quotas({ QUOTA_BUDGETS_PER_TENANT: QUOTA } as QuotaSettings, new FakeQuotasRepository({ 'budgets-per-tenant': (t) => budgets.count(t) }), inlineTransactions);
    service = new BudgetsService(budgets, clients, quotas, inlineTransactions, { PRODUCT_KEY_OWN: 'core', internalProductKeys: ['suite_a'] });
  });

  /** An OAuth client of `tenantId`, as POST /api/oauth/clients makes one. */
  const client = async (tenantId = TENANT) => (await clients.create(tenantId, USER, { name: 'backend', scopes: ['ai:invoke'] }, false)).clientId;

  it('the fake is a Budgets', () => {
    expect(budgets).toBeInstanceOf(Budgets);
  });

  describe('setting a budget', () => {
    it("caps one of the tenant's OAuth clients, answered in micro-credits with the running month's figures", async () => {
      const id = await client();
      const view = await service.set(TENANT, 'client', id, 5_000_000);
      expect(view).toEqual({
        kind: 'client',
        id,
        monthlyCapMicroCredits: 5_000_000,
        spentMicroCredits: 0,
        reservedMicroCredits: 0,
        month: new Date().toISOString().slice(0, 7),
        createdAt: expect.stringMatching(/Z$/),
        updatedAt: view.createdAt,
      });
      budgets.spend(TENANT, 'client', id, { spent: 1_200, reserved: 300 });
      expect(await service.set(TENANT, 'client', id, 0)).toMatchObject({ monthlyCapMicroCredits: 0, spentMicroCredits: 1_200, reservedMicroCredits: 300, createdAt: view.createdAt });
    });

    it('a client of another tenant, an unknown or a deleted client is 404 oauth-client-not-found, and nothing is written', async () => {
      const foreign = await client(OTHER_TENANT);
      const deleted = await client();
      await clients.delete(TENANT, deleted);
      for (const id of [foreign, 'ffc_doesNotExist0000000000', deleted]) {
        const p = await problemOf(service.set(TENANT, 'client', id, 10));
        expect([p.problem.status, p.problem.slug]).toEqual([404, 'oauth-client-not-found']);
        expect(p.detail).toContain(id);
      }
      expect(budgets.count(TENANT)).toBe(0);
    });

    it('caps a product key the gateway knows (its own and the internal ones); any other is 404 product-key-not-found', async () => {
      expect(await service.set(TENANT, 'product', 'core', 10)).toMatchObject({ kind: 'product', id: 'core' });
      expect(await service.set(TENANT, 'product', 'suite_a', 10)).toMatchObject({ kind: 'product', id: 'suite_a' });
      // A client id is no product key, nor a product key a client.
      const id = await client();
      for (const [kind, scopeId, slug] of [['product', 'nonesuch', 'product-key-not-found'], ['product', id, 'product-key-not-found'], ['client', 'core', 'oauth-client-not-found']] as const) {
        const p = await problemOf(service.set(TENANT, kind, scopeId, 10));
        expect([p.problem.status, p.problem.slug]).toEqual([404, slug]);
      }
      expect(budgets.count(TENANT)).toBe(2);
    });

    it('a new budget counts against QUOTA_BUDGETS_PER_TENANT (409 naming it); changing a cap does not, nor do other tenants\' budgets', async () => {
      await service.set(OTHER_TENANT, 'product', 'core', 1);
      await service.set(TENANT, 'product', 'core', 1);
      await service.set(TENANT, 'product', 'suite_a', 1);
      const id = await client();
      await service.set(TENANT, 'client', id, 1);
      const over = await problemOf(service.set(TENANT, 'client', await client(), 1));
      expect([over.problem.status, over.problem.slug, over.extensions]).toEqual([409, 'quota-exceeded', { quota: 'budgets-per-tenant', limit: QUOTA, current: QUOTA }]);
      expect(await service.set(TENANT, 'client', id, 99)).toMatchObject({ monthlyCapMicroCredits: 99 });
      // Removing one frees its place.
      await service.remove(TENANT, 'product', 'core');
      expect(await service.set(TENANT, 'product', 'core', 2)).toMatchObject({ monthlyCapMicroCredits: 2 });
    });
  });

  describe('removing a budget', () => {
    it('removes it; a budget that is not there, or is another tenant\'s, is 404 budget-not-found naming what was asked', async () => {
      await service.set(TENANT, 'product', 'core', 1);
      await service.set(OTHER_TENANT, 'product', 'suite_a', 1);
      await service.remove(TENANT, 'product', 'core');
      expect(await budgets.get(TENANT, 'product', 'core')).toBeNull();
      const again = await problemOf(service.remove(TENANT, 'product', 'core'));
      expect([again.problem.status, again.problem.slug, again.detail]).toEqual([404, 'budget-not-found', 'This tenant has no budget for the product key core.']);
      const foreign = await problemOf(service.remove(TENANT, 'product', 'suite_a'));
      expect(foreign.problem.slug).toBe('budget-not-found');
      expect((await problemOf(service.remove(TENANT, 'client', 'ffc_x'))).detail).toBe('This tenant has no budget for the OAuth client ffc_x.');
      expect(await budgets.get(OTHER_TENANT, 'product', 'suite_a')).not.toBeNull();
    });
  });

  describe('listing budgets', () => {
    it("the tenant's own, oldest first, one more than `limit` when another page exists; the cursor of the page's last goes on after it", async () => {
      const id = await client();
      await service.set(TENANT, 'product', 'core', 1);
      await service.set(TENANT, 'client', id, 2);
      await service.set(TENANT, 'product', 'suite_a', 3);
      await service.set(OTHER_TENANT, 'product', 'core', 4);
      const all = await service.list(TENANT, { limit: 10 });
      expect(all.map((b) => [b.kind, b.id, b.monthlyCapMicroCredits])).toEqual([['product', 'core', 1], ['client', id, 2], ['product', 'suite_a', 3]]);
      const first = await service.list(TENANT, { limit: 1 });
      expect(first.map((b) => b.id)).toEqual(['core', id]);
      const next = await service.list(TENANT, { limit: 1, cursor: encodeCursor(budgetCursor(first[0]!)) });
      expect(next.map((b) => b.id)).toEqual([id, 'suite_a']);
      expect((await service.list(TENANT, { limit: 5, cursor: encodeCursor(budgetCursor(next[1]!)) }))).toEqual([]);
    });

    it('a product key holding ":" survives the cursor (split at the first)', async () => {
      service = new BudgetsService(budgets, clients, new Quotas({ QUOTA_BUDGETS_PER_TENANT: QUOTA } as QuotaSettings, new FakeQuotasRepository(), inlineTransactions), inlineTransactions, { PRODUCT_KEY_OWN: 'core', internalProductKeys: ['suite:a', 'suite:b'] });
      await service.set(TENANT, 'product', 'suite:a', 1);
      await service.set(TENANT, 'product', 'suite:b', 1);
      const [first] = await service.list(TENANT, { limit: 1 });
      expect(budgetCursor(first!).id).toBe('product:suite:a');
      expect((await service.list(TENANT, { limit: 1, cursor: encodeCursor(budgetCursor(first!)) })).map((b) => b.id)).toEqual(['suite:b']);
    });

    it('refuses a cursor it did not issue with 400: garbage, a bad instant, or an id that names no budget', async () => {
      const at = new Date().toISOString();
      for (const cursor of ['forged', encodeCursor({ at: 'yesterday', id: 'product:core' }), encodeCursor({ at, id: '00000000-0000-4000-8000-000000000001' }), encodeCursor({ at, id: 'tenant:core' }), encodeCursor({ at, id: `product:${'x'.repeat(65)}` })]) {
        const p = await problemOf(service.list(TENANT, { limit: 1, cursor }));
        expect(p.problem.status).toBe(400);
      }
    });
  });
});
