import { createTenant } from '@flagship/ledger/testing';
import { inFakeTransaction, type InTransaction } from '@flagship/persistence/testing';
import { describeAgreement, testDataSource } from '@flagship/testing';
import type { DomainEvent } from './webhook-events';
import { type NewWebhook, SqlWebhooksRepository, type WebhooksRepository } from './webhooks.repository';
import { FakeWebhooksRepository } from './webhooks.repository.fake';

const hook = (url: string, events: string[]): NewWebhook => ({ url, description: '', events, secretSealed: 'v1.sealed', createdBy: 'u1' });
const flagUpdated = (flagKey: string): DomainEvent => ({ type: 'flag.updated', data: { flagKey } });

/**
 * The same cases against the real repository (Postgres, the webhook_enqueue fan-out included) and
 * its in-memory twin, so the webhooks service's unit spec, which runs on the fake, proves what the
 * real one does.
 */
describe('WebhooksRepository: the fake agrees with Postgres', () => {
  const pg = testDataSource();

  type Subject = {
    repo: WebhooksRepository;
    tx: InTransaction;
    tenant: () => Promise<string>;
    disable: (id: string) => Promise<void>;
    fail: (deliveryId: string) => Promise<void>;
  };
  const real = (): Subject => ({
    repo: new SqlWebhooksRepository(pg.ds),
    tx: pg.inTransaction,
    tenant: () => createTenant(pg.ds),
    disable: async (id) => void (await pg.ds.query(`UPDATE webhooks SET enabled = false, disabled_at = now() WHERE id = $1`, [id])),
    fail: async (id) => void (await pg.ds.query(`UPDATE webhook_deliveries SET status = 'failed' WHERE id = $1`, [id])),
  });
  const fake = (): Subject => {
    const repo = new FakeWebhooksRepository();
    let n = 0;
    return {
      repo,
      tx: inFakeTransaction,
      tenant: async () => `00000000-0000-4000-8000-${String(++n).padStart(12, '0')}`,
      disable: async (id) => repo.disable(id),
      fail: async (id) => void (repo.outbox.find((d) => d.id === id)!.status = 'failed'),
    };
  };

  describeAgreement({ Postgres: real, 'the fake': fake }, (subject) => {
    let s: Subject;
    beforeEach(() => {
      s = subject();
    });

    it('inserts, finds and lists webhooks oldest first in pages, each tenant only its own', async () => {
      const [a, b] = [await s.tenant(), await s.tenant()];
      const first = await s.tx((m) => s.repo.insert(m, a, hook('https://one.example.com', ['flag.updated'])));
      const second = await s.tx((m) => s.repo.insert(m, a, hook('https://two.example.com', ['segment.updated', 'flag.created'])));
      expect(first).toMatchObject({ url: 'https://one.example.com', events: ['flag.updated'], enabled: true, disabledAt: null, createdBy: 'u1' });
      expect(await s.repo.find(a, second.id)).toEqual(second);
      expect(await s.repo.find(b, second.id)).toBeNull();
      expect(await s.repo.find(a, 'not-a-uuid')).toBeNull();
      expect((await s.repo.list(a, 1)).map((w) => w.id)).toEqual([first.id, second.id]);
      expect((await s.repo.list(a, 5, { at: first.createdAt.toISOString(), id: first.id })).map((w) => w.id)).toEqual([second.id]);
      expect(await s.repo.list(b, 5)).toEqual([]);
    });

    it('fans an event out to the subscribed, enabled webhooks of the tenant, as {type, timestamp, data}', async () => {
      const [a, b] = [await s.tenant(), await s.tenant()];
      const flags = await s.tx((m) => s.repo.insert(m, a, hook('https://f.example.com', ['flag.updated'])));
      const segments = await s.tx((m) => s.repo.insert(m, a, hook('https://s.example.com', ['segment.updated'])));
      const off = await s.tx((m) => s.repo.insert(m, a, hook('https://off.example.com', ['flag.updated'])));
      const other = await s.tx((m) => s.repo.insert(m, b, hook('https://b.example.com', ['flag.updated'])));
      await s.disable(off.id);
      await s.tx((m) => s.repo.enqueue(m, a, [flagUpdated('one'), flagUpdated('two')]));
      const log = await s.repo.deliveries(a, flags.id, 10);
      expect(log.map((d) => [d.type, (d.payload as { data: { flagKey: string } }).data.flagKey, d.status, d.attempts])).toEqual([
        ['flag.updated', 'two', 'pending', []],
        ['flag.updated', 'one', 'pending', []],
      ]);
      expect(log[0]!.payload).toEqual({ type: 'flag.updated', timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/), data: { flagKey: 'two' } });
      for (const [tenant, id] of [[a, segments.id], [a, off.id], [b, other.id], [b, flags.id]] as const) expect(await s.repo.deliveries(tenant, id, 10)).toEqual([]);
      expect(await s.repo.deliveries(a, flags.id, 1)).toHaveLength(2);
      const older = await s.repo.deliveries(a, flags.id, 1, { at: log[0]!.createdAt.toISOString(), id: log[0]!.id });
      expect(older.map((d) => d.id)).toEqual([log[1]!.id]);
    });

    it('replays only a delivery of that webhook of that tenant, putting it back in the queue', async () => {
      const [a, b] = [await s.tenant(), await s.tenant()];
      const w = await s.tx((m) => s.repo.insert(m, a, hook('https://f.example.com', ['flag.updated'])));
      await s.tx((m) => s.repo.enqueue(m, a, [flagUpdated('k')]));
      const [d] = await s.repo.deliveries(a, w.id, 10);
      await s.fail(d!.id);
      expect(await s.repo.replay(b, w.id, d!.id)).toBe(false);
      expect(await s.repo.replay(a, w.id, 'nope')).toBe(false);
      expect(await s.repo.replay(a, w.id, b)).toBe(false);
      expect((await s.repo.deliveries(a, w.id, 10))[0]!.status).toBe('failed');
      expect(await s.repo.replay(a, w.id, d!.id)).toBe(true);
      expect((await s.repo.deliveries(a, w.id, 10))[0]!.status).toBe('pending');
    });

    it("deletes only the tenant's own webhook, and its deliveries with it", async () => {
      const [a, b] = [await s.tenant(), await s.tenant()];
      const w = await s.tx((m) => s.repo.insert(m, a, hook('https://f.example.com', ['flag.updated'])));
      await s.tx((m) => s.repo.enqueue(m, a, [flagUpdated('k')]));
      expect(await s.repo.delete(b, w.id)).toBe(false);
      expect(await s.repo.delete(a, 'not-a-uuid')).toBe(false);
      expect(await s.repo.delete(a, w.id)).toBe(true);
      expect(await s.repo.delete(a, w.id)).toBe(false);
      expect(await s.repo.find(a, w.id)).toBeNull();
      expect(await s.repo.deliveries(a, w.id, 10)).toEqual([]);
    });
  });
});
