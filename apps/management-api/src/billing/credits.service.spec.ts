import { CreditBalances } from '@flagship/ledger';
import { FAKE_TX } from '../testing/inline-transactions';
import { FakeCreditBalances } from './credits.repository.fake';
import { CreditsService } from './credits.service';

const TENANT = '00000000-0000-4000-8000-0000000000a1';
const OTHER_TENANT = '00000000-0000-4000-8000-0000000000b2';

describe('CreditsService', () => {
  let credits: FakeCreditBalances;
  let service: CreditsService;

  beforeEach(() => {
    credits = new FakeCreditBalances();
    service = new CreditsService(credits);
  });

  const grant = (tenantId: string, amount: number) => credits.grantCredits(FAKE_TX, tenantId, { amount, reason: 'top-up', grantedBy: 'spec' });

  it('the fake is a CreditBalances', () => {
    expect(credits).toBeInstanceOf(CreditBalances);
  });

  it('a tenant never granted credits has a balance of nothing, not a 404', async () => {
    expect(await service.balance(TENANT)).toEqual({ balance: 0, reserved: 0 });
  });

  it('answers the balance in integer micro-credits and what requests in flight hold of it, for the tenant asked only', async () => {
    await grant(TENANT, 5_000_000);
    await grant(TENANT, 1);
    credits.hold(TENANT, 1_234);
    await grant(OTHER_TENANT, 7);
    expect(await service.balance(TENANT)).toEqual({ balance: 5_000_001, reserved: 1_234 });
    expect(await service.balance(OTHER_TENANT)).toEqual({ balance: 7, reserved: 0 });
  });

  it('a balance taken below zero (a reversal after spending) is told as it is', async () => {
    await grant(TENANT, 100);
    await grant(TENANT, -250);
    expect(await service.balance(TENANT)).toEqual({ balance: -150, reserved: 0 });
  });
});
