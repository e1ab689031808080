import { LowBalanceAlerts } from '@flagship/ledger';
import { encodeCursor } from '@flagship/service-kit';
import { FAKE_TX } from '../testing/inline-transactions';
import { problemOf } from '../testing/problem-of';
import { FakeLowBalanceAlerts } from './low-balance.repository.fake';
import { crossingCursor, LowBalanceService } from './low-balance.service';

const TENANT = '00000000-0000-4000-8000-0000000000a1';
const OTHER_TENANT = '00000000-0000-4000-8000-0000000000b2';

describe('LowBalanceService', () => {
  let alerts: FakeLowBalanceAlerts;
  let service: LowBalanceService;

  beforeEach(() => {
    alerts = new FakeLowBalanceAlerts();
    service = new LowBalanceService(alerts, alerts.credits);
  });

  const grant = (tenantId: string, amount: number) => alerts.credits.grantCredits(FAKE_TX, tenantId, { amount, reason: 'top-up', grantedBy: 'spec' });

  it('the fake is a LowBalanceAlerts', () => {
    expect(alerts).toBeInstanceOf(LowBalanceAlerts);
  });

  describe('the alert', () => {
    it('is unset at first: no threshold, not armed, not below, whatever the balance', async () => {
      expect(await service.get(TENANT)).toEqual({ threshold: null, armed: false, below: false, balance: 0 });
      await grant(TENANT, -5);
      expect(await service.get(TENANT)).toEqual({ threshold: null, armed: false, below: false, balance: -5 });
    });

    it('set answers the alert as read back: armed while the balance is above the threshold, below once at or under it', async () => {
      await grant(TENANT, 1_000_000);
      expect(await service.set(TENANT, 200_000)).toEqual({ threshold: 200_000, armed: true, below: false, balance: 1_000_000 });
      expect(await service.set(TENANT, 1_000_000)).toEqual({ threshold: 1_000_000, armed: false, below: true, balance: 1_000_000 });
      expect(await service.set(TENANT, 999_999)).toEqual({ threshold: 999_999, armed: true, below: false, balance: 1_000_000 });
    });

    it('a tenant with no balance is at 0: below any threshold, and a threshold of 0 is not armed', async () => {
      expect(await service.set(TENANT, 0)).toEqual({ threshold: 0, armed: false, below: true, balance: 0 });
    });

    it('follows settlements and grants: disarmed by the crossing, below until a grant lifts the balance above it, then armed again', async () => {
      await grant(TENANT, 1_000_000);
      await service.set(TENANT, 200_000);
      alerts.settle(TENANT, 850_000);
      expect(await service.get(TENANT)).toEqual({ threshold: 200_000, armed: false, below: true, balance: 150_000 });
      await grant(TENANT, 50_000);
      expect(await service.get(TENANT)).toEqual({ threshold: 200_000, armed: false, below: true, balance: 200_000 });
      await grant(TENANT, 1);
      expect(await service.get(TENANT)).toEqual({ threshold: 200_000, armed: true, below: false, balance: 200_001 });
    });

    it("is the tenant's own: another tenant's threshold and balance are not seen or changed", async () => {
      await grant(OTHER_TENANT, 10);
      await service.set(OTHER_TENANT, 5);
      expect(await service.get(TENANT)).toEqual({ threshold: null, armed: false, below: false, balance: 0 });
      await service.set(TENANT, 50);
      await service.remove(TENANT);
      expect(await service.get(OTHER_TENANT)).toEqual({ threshold: 5, armed: true, below: false, balance: 10 });
    });

    it('remove unsets it (and removing none is no error); its crossings stay', async () => {
      await grant(TENANT, 100);
      await service.set(TENANT, 50);
      alerts.settle(TENANT, 60);
      await service.remove(TENANT);
      await service.remove(TENANT);
      expect(await service.get(TENANT)).toEqual({ threshold: null, armed: false, below: false, balance: 40 });
      expect(await service.crossings(TENANT, { limit: 10 })).toHaveLength(1);
    });
  });

  describe('crossings', () => {
    /** Three crossings of a threshold of 900: balances 800, 700, then 600, each re-armed by a grant. */
    const crossThrice = async (tenantId: string) => {
      await grant(tenantId, 1_000);
      await service.set(tenantId, 900);
      for (const debit of [200, 300, 400]) {
        alerts.settle(tenantId, debit);
        await grant(tenantId, debit);
      }
    };

    it('newest first, as id, threshold, balance and instant; one more than `limit` when another page exists; the cursor goes on after the last', async () => {
      await crossThrice(TENANT);
      await crossThrice(OTHER_TENANT);
      const all = await service.crossings(TENANT, { limit: 10 });
      expect(all.map((c) => c.balance)).toEqual([600, 700, 800]);
      expect(all[0]).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), threshold: 900, balance: 600, crossedAt: expect.stringMatching(/Z$/) });
      const first = await service.crossings(TENANT, { limit: 1 });
      expect(first.map((c) => c.balance)).toEqual([600, 700]);
      const next = await service.crossings(TENANT, { limit: 1, cursor: encodeCursor(crossingCursor(first[0]!)) });
      expect(next.map((c) => c.balance)).toEqual([700, 800]);
      expect(await service.crossings(TENANT, { limit: 1, cursor: encodeCursor(crossingCursor(all[2]!)) })).toEqual([]);
    });

    it('refuses a cursor it did not issue with 400', async () => {
      for (const cursor of ['forged', encodeCursor({ at: new Date().toISOString(), id: 'not-a-uuid' }), encodeCursor({ at: '2026-02-30T00:00:00.000Z', id: '00000000-0000-4000-8000-000000000001' })]) {
        expect((await problemOf(service.crossings(TENANT, { limit: 1, cursor }))).problem.status).toBe(400);
      }
    });
  });
});
