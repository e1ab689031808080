import { UsageMeterRepository, type UsageRow } from '@flagship/ledger';
import { describeAgreement, testDataSource } from '@flagship/testing';
import { inFakeTransaction, type InTransaction } from '@flagship/persistence/testing';
import { FakeUsageOutbox, type UsageOutbox } from '../testing/usage-outbox.fake';

/**
 * The meter's outbox, the same cases on libs/ledger's UsageMeterRepository over Postgres and on the
 * in-memory outbox UsageMeterService's unit spec runs on: which rows are billable, in which order,
 * and that a marked row is not claimed again.
 */
describe('the usage outbox: the fake agrees with Postgres', () => {
  const pg = testDataSource();
  let tenantId: string;
  let other: string;

  beforeAll(async () => {
    [{ id: tenantId }, { id: other }] = await pg.ds.query(`INSERT INTO tenants (name, primary_email) VALUES ('A', 'a@acme.test'), ('B', 'b@acme.test') RETURNING id`);
  });

  type Row = Pick<UsageRow, 'status' | 'debit' | 'zeroRated'> & { tenant?: string; minutesAgo: number | null };
  interface Subject {
    outbox: UsageOutbox;
    tx: InTransaction;
    add: (r: Row) => Promise<string>;
    reset: () => Promise<void>;
  }

  const real = (): Subject => ({
    outbox: new UsageMeterRepository(),
    tx: pg.inTransaction,
    add: async (r) =>
      (
        (await pg.ds.query(
          `INSERT INTO usage_ledger (tenant_id, client_id, product_key, provider, model, endpoint, status, debit, zero_rated, completed_at)
           VALUES ($1, 'c', 'core', 'inhouse', 'm', 'chat.completions', $2, $3, $4, CASE WHEN $5::int IS NULL THEN NULL ELSE now() - make_interval(mins => $5::int) END) RETURNING id`,
          [r.tenant ?? tenantId, r.status, r.debit, r.zeroRated, r.minutesAgo],
        )) as Array<{ id: string }>
      )[0].id,
    reset: async () => void (await pg.ds.query(`DELETE FROM usage_ledger`)),
  });
  const fake = (): Subject => {
    const outbox = new FakeUsageOutbox();
    return {
      outbox,
      tx: inFakeTransaction,
      add: async (r) => outbox.add({ tenantId: r.tenant ?? tenantId, status: r.status, debit: r.debit, zeroRated: r.zeroRated, completedAt: r.minutesAgo === null ? null : new Date(Date.now() - r.minutesAgo * 60_000) }).id,
      reset: async () => undefined,
    };
  };

  describeAgreement({ Postgres: real, 'the fake': fake }, (subject) => {
    let s: Subject;
    beforeEach(() => {
      s = subject();
    });

    it('claims billable rows only (succeeded or abandoned, debited, not zero-rated, not reported), oldest completed first, up to the limit', async () => {
      const newest = await s.add({ status: 'succeeded', debit: 50, zeroRated: false, minutesAgo: 1 });
      const oldest = await s.add({ status: 'abandoned', debit: 70, zeroRated: false, minutesAgo: 30, tenant: other });
      const middle = await s.add({ status: 'succeeded', debit: 60, zeroRated: false, minutesAgo: 10 });
      await s.add({ status: 'succeeded', debit: 80, zeroRated: true, minutesAgo: 5 });
      await s.add({ status: 'failed', debit: 80, zeroRated: false, minutesAgo: 5 });
      await s.add({ status: 'pending', debit: 0, zeroRated: false, minutesAgo: null });
      await s.add({ status: 'succeeded', debit: 0, zeroRated: false, minutesAgo: 5 });
      const all = await s.tx((m) => s.outbox.claim(m, 10));
      expect(all.map((r) => r.id)).toEqual([oldest, middle, newest]);
      expect(all.map((r) => [r.debit, r.tenantId])).toEqual([
        [70, other],
        [60, tenantId],
        [50, tenantId],
      ]);
      expect((await s.tx((m) => s.outbox.claim(m, 2))).map((r) => r.id)).toEqual([oldest, middle]);
    });

    it('a marked row is claimed no more; marking names the tenant, so a wrong one marks nothing', async () => {
      const a = await s.add({ status: 'succeeded', debit: 50, zeroRated: false, minutesAgo: 2 });
      const b = await s.add({ status: 'succeeded', debit: 50, zeroRated: false, minutesAgo: 1 });
      await s.tx((m) => s.outbox.markReported(m, [{ id: a, tenantId }, { id: b, tenantId: other }]));
      await s.tx((m) => s.outbox.markReported(m, []));
      expect((await s.tx((m) => s.outbox.claim(m, 10))).map((r) => r.id)).toEqual([b]);
    });
  });
});
