import { randomUUID } from 'node:crypto';
import { describeAgreement, testDataSource } from '@flagship/testing';
import { inFakeTransaction, type InTransaction } from '@flagship/persistence/testing';
import { SqlStripeEventsRepository, type StripeEventsRepository } from './stripe-events.repository';
import { FakeStripeEventsRepository } from './stripe-events.repository.fake';

/**
 * The same cases against the real inbox (Postgres) and its in-memory twin, so the processor's unit
 * tests, which run on the fake, prove what the real one does.
 */
describe('StripeEventsRepository: the fake agrees with Postgres', () => {
  const pg = testDataSource();

  type Subject = { repo: StripeEventsRepository; tx: InTransaction; reset: () => Promise<void> };
  const real = (): Subject => ({ repo: new SqlStripeEventsRepository(pg.ds), tx: pg.inTransaction, reset: async () => void (await pg.ds.query(`DELETE FROM stripe_events`)) });
  const fake = (): Subject => ({ repo: new FakeStripeEventsRepository(), tx: inFakeTransaction, reset: async () => undefined });

  const event = (created: number, type = 'invoice.paid') => {
    const id = `evt_${randomUUID().replace(/-/g, '')}`;
    return { id, object: 'event', type, created, data: { object: { id: `in_${created}`, object: 'invoice' } } };
  };

  describeAgreement({ Postgres: real, 'the fake': fake }, (subject) => {
    let s: Subject;
    beforeEach(() => {
      s = subject();
    });

    it('stores an event id once, whichever way it arrives', async () => {
      const e = event(100);
      expect(await s.repo.store(e, 'webhook')).toBe(true);
      expect(await s.repo.store(e, 'catch_up')).toBe(false);
      expect(await s.repo.store({ ...e, type: 'invoice.payment_failed' }, 'webhook')).toBe(false);
      expect(await s.tx((m) => s.repo.claimNext(m))).toEqual({ id: e.id, type: 'invoice.paid', payload: e, attempts: 0 });
    });

    it("claims the oldest by Stripe's time, not by arrival; a processed one never again", async () => {
      const [late, early] = [event(200), event(100)];
      await s.repo.store(late, 'webhook');
      await s.repo.store(early, 'catch_up');
      const first = await s.tx(async (m) => {
        const claimed = await s.repo.claimNext(m);
        await s.repo.markProcessed(m, claimed!.id);
        return claimed;
      });
      expect(first?.id).toBe(early.id);
      const second = await s.tx(async (m) => {
        const claimed = await s.repo.claimNext(m);
        await s.repo.markProcessed(m, claimed!.id, 'ignored: no such customer');
        return claimed;
      });
      expect(second?.id).toBe(late.id);
      expect(await s.tx((m) => s.repo.claimNext(m))).toBeNull();
      expect(await s.tx((m) => s.repo.inboxBacklog(m))).toEqual({ rows: 0, oldestAgeSeconds: 0 });
    });

    it('a failed attempt is counted and waits its delay; an immediate retry is due at once; a processed event takes no failure', async () => {
      const [e, other] = [event(100), event(300)];
      await s.repo.store(e, 'webhook');
      await s.repo.store(other, 'webhook');
      await s.repo.recordFailure(e.id, 'x'.repeat(600), 60_000);
      expect((await s.tx((m) => s.repo.claimNext(m)))?.id).toBe(other.id);
      await s.repo.recordFailure(other.id, 'Stripe down', 0);
      expect(await s.tx((m) => s.repo.claimNext(m))).toEqual({ id: other.id, type: 'invoice.paid', payload: other, attempts: 1 });
      await s.tx((m) => s.repo.markProcessed(m, other.id));
      await s.repo.recordFailure(other.id, 'late', 0);
      expect(await s.tx((m) => s.repo.claimNext(m))).toBeNull();
      const backlog = await s.tx((m) => s.repo.inboxBacklog(m));
      expect(backlog.rows).toBe(1);
      expect(backlog.oldestAgeSeconds).toBeGreaterThanOrEqual(0);
      expect(backlog.oldestAgeSeconds).toBeLessThan(60);
    });
  });
});
