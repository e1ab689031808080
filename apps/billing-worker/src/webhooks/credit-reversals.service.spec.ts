import type { Tx } from '@flagship/persistence';
import { CreditPurchasesRepository } from './credit-purchases.repository';
import { FakeCreditPurchasesRepository } from './credit-purchases.repository.fake';
import { type ChargeFacts, CreditReversalsService } from './credit-reversals.service';

const TX = {} as Tx;
const TENANT = '00000000-0000-4000-8000-0000000000a1';
const OTHER = '00000000-0000-4000-8000-0000000000b2';

describe('CreditReversalsService', () => {
  let repo: FakeCreditPurchasesRepository;
  let service: CreditReversalsService;
  const noSession = async () => null;
  const charge = (over: Partial<ChargeFacts> = {}): ChargeFacts => ({ chargeId: 'ch_1', paymentIntentId: 'pi_1', customerTenantId: TENANT, amountRefunded: 0, disputes: [], ...over });

  beforeEach(() => {
    repo = new FakeCreditPurchasesRepository();
    service = new CreditReversalsService(repo);
    // $25.00 for 250,000,000 micro-credits.
    repo.seed({ stripeSessionId: 'cs_1', tenantId: TENANT, productKey: 'core', stripePaymentIntentId: 'pi_1', amount: 2500, currency: 'usd', credits: 250_000_000 });
  });

  it('the fake is a repository', () => {
    expect(repo).toBeInstanceOf(CreditPurchasesRepository);
  });

  it('a full refund takes every credit back, even when they are spent (the balance goes negative)', async () => {
    repo.balances.set(TENANT, 10_000_000);
    expect(await service.chargeChanged(TX, charge({ amountRefunded: 2500 }), noSession)).toEqual([TENANT]);
    expect(repo.balances.get(TENANT)).toBe(-240_000_000);
    expect(repo.grants).toEqual([{ tenantId: TENANT, amount: -250_000_000, reason: expect.stringContaining('ch_1') }]);
  });

  it('partial refunds take back their share; the second event only the difference; the same event delivered twice moves nothing', async () => {
    await service.chargeChanged(TX, charge({ amountRefunded: 1000 }), noSession);
    expect(await service.chargeChanged(TX, charge({ amountRefunded: 1000 }), noSession)).toEqual([]);
    await service.chargeChanged(TX, charge({ amountRefunded: 1500 }), noSession);
    expect(repo.grants.map((g) => g.amount)).toEqual([-100_000_000, -50_000_000]);
    expect(repo.balances.get(TENANT)).toBe(100_000_000);
    expect(repo.purchases.get('cs_1')).toMatchObject({ amountRefunded: 1500, creditsTakenBack: 150_000_000 });
  });

  it('a dispute takes its share back and pauses; won, it restores both; another one lost keeps the credits and unpauses', async () => {
    expect(await service.chargeChanged(TX, charge({ disputes: [{ id: 'du_1', amount: 2500, status: 'needs_response' }] }), noSession)).toEqual([TENANT]);
    expect(repo.purchases.get('cs_1')).toMatchObject({ disputeOpen: true, creditsTakenBack: 250_000_000 });
    expect(repo.balances.get(TENANT)).toBe(0);
    // A later event of the same open dispute: nothing moves, still paused.
    expect(await service.chargeChanged(TX, charge({ disputes: [{ id: 'du_1', amount: 2500, status: 'under_review' }] }), noSession)).toEqual([]);
    expect(await service.chargeChanged(TX, charge({ disputes: [{ id: 'du_1', amount: 2500, status: 'won' }] }), noSession)).toEqual([TENANT]);
    expect(repo.purchases.get('cs_1')).toMatchObject({ disputeOpen: false, creditsTakenBack: 0 });
    expect(repo.balances.get(TENANT)).toBe(250_000_000);

    repo.seed({ stripeSessionId: 'cs_2', tenantId: TENANT, productKey: 'core', stripePaymentIntentId: 'pi_2', amount: 1000, currency: 'usd', credits: 100_000_000 });
    const second = { chargeId: 'ch_2', paymentIntentId: 'pi_2' };
    await service.chargeChanged(TX, charge({ ...second, disputes: [{ id: 'du_2', amount: 1000, status: 'needs_response' }] }), noSession);
    expect(await service.chargeChanged(TX, charge({ ...second, disputes: [{ id: 'du_2', amount: 1000, status: 'lost' }] }), noSession)).toEqual([TENANT]);
    expect(repo.purchases.get('cs_2')).toMatchObject({ disputeOpen: false, creditsTakenBack: 100_000_000 });
    expect(repo.balances.get(TENANT)).toBe(250_000_000);
    expect(repo.grants.map((g) => g.amount)).toEqual([-250_000_000, 250_000_000, -100_000_000]);
  });

  it('finds a purchase recorded before payment intents were kept through its Checkout Session, once', async () => {
    repo.seed({ stripeSessionId: 'cs_old', tenantId: TENANT, productKey: 'core', stripePaymentIntentId: null, amount: 500, currency: 'usd', credits: 5_000_000 });
    const asked: string[] = [];
    const sessionOf = async (pi: string) => (asked.push(pi), pi === 'pi_old' ? 'cs_old' : null);
    expect(await service.chargeChanged(TX, charge({ chargeId: 'ch_old', paymentIntentId: 'pi_old', amountRefunded: 500 }), sessionOf)).toEqual([TENANT]);
    expect(repo.purchases.get('cs_old')).toMatchObject({ stripePaymentIntentId: 'pi_old', creditsTakenBack: 5_000_000 });
    await service.chargeChanged(TX, charge({ chargeId: 'ch_old', paymentIntentId: 'pi_old', amountRefunded: 500 }), sessionOf);
    expect(asked).toEqual(['pi_old']);
  });

  it('takes nothing for a charge that is not a credit purchase, has no payment intent, or whose customer is another tenant', async () => {
    expect(await service.chargeChanged(TX, charge({ paymentIntentId: 'pi_invoice', amountRefunded: 2500 }), noSession)).toEqual([]);
    expect(await service.chargeChanged(TX, charge({ paymentIntentId: null, amountRefunded: 2500 }), noSession)).toEqual([]);
    expect(await service.chargeChanged(TX, charge({ customerTenantId: OTHER, amountRefunded: 2500 }), noSession)).toEqual([]);
    expect(await service.chargeChanged(TX, charge({ customerTenantId: null, amountRefunded: 2500 }), noSession)).toEqual([]);
    expect(repo.grants).toEqual([]);
    expect(repo.purchases.get('cs_1')).toMatchObject({ creditsTakenBack: 0, amountRefunded: 0 });
  });

  it('records a purchase once', async () => {
    const p = { stripeSessionId: 'cs_9', tenantId: TENANT, productKey: 'core', stripePaymentIntentId: 'pi_9', amount: 100, currency: 'usd', credits: 1_000_000 };
    await service.purchased(TX, p);
    await service.purchased(TX, { ...p, credits: 5 });
    expect(repo.purchases.get('cs_9')).toMatchObject({ credits: 1_000_000 });
  });
});
