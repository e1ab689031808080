import { BudgetsRepository, LowBalanceRepository, UsageLedgerRepository } from '@flagship/ledger';
import { aReservation, aSettlement, createTenant } from '@flagship/ledger/testing';
import { createDataSource, type DataSource } from '@flagship/persistence';
import { testDataSource } from '@flagship/testing';
import { OutboundWebhooksRepository } from './outbound-webhooks.repository';
import type { SendOutcome } from './webhook-sender';

const FAILED: SendOutcome = { outcome: 'failed', responseCode: 500, durationMs: 12, error: 'HTTP 500' };
const DELIVERED: SendOutcome = { outcome: 'delivered', responseCode: 200, durationMs: 8, error: null };
const FAR_PAST = new Date('2000-01-01T00:00:00Z');

/**
 * The worker's outbox statements on Postgres: what only SQL can get wrong (leases across two pools,
 * a stale lease's late answer, disabling in the same transaction) and the ledger's triggers.
 */
describe('OutboundWebhooksRepository', () => {
  const pg = testDataSource();
  let second: DataSource;
  let repo: OutboundWebhooksRepository;

  beforeAll(async () => {
    second = createDataSource({ url: (pg.ds.options as { url: string }).url, poolSize: 2, entities: [] });
    await second.initialize();
    repo = new OutboundWebhooksRepository(pg.ds);
  });
  afterAll(() => second?.destroy());

  async function webhook(tenantId: string, events: string[]): Promise<string> {
    const [row] = (await pg.ds.query(`INSERT INTO webhooks (tenant_id, url, events, secret_sealed) VALUES ($1, 'https://hooks.example.com/x', $2, 'v1.x.y.z') RETURNING id`, [tenantId, events])) as Array<{ id: string }>;
    return row!.id;
  }
  const enqueue = (tenantId: string, n: number) => pg.ds.query(`SELECT webhook_enqueue($1, 'flag.updated', jsonb_build_object('n', g)) FROM generate_series(1, $2) g`, [tenantId, n]);
  const deliveriesOf = (webhookId: string) =>
    pg.ds.query(`SELECT status, attempts, (SELECT count(*)::int FROM webhook_attempts a WHERE a.delivery_id = d.id) AS logged FROM webhook_deliveries d WHERE webhook_id = $1 ORDER BY seq`, [webhookId]) as Promise<
      Array<{ status: string; attempts: number; logged: number }>
    >;

  it('leases each due delivery to one claimer across two pools, and a lease that runs out comes back', async () => {
    const t = await createTenant(pg.ds);
    const w = await webhook(t, ['flag.updated']);
    await enqueue(t, 10);
    const other = new OutboundWebhooksRepository(second);
    const [a, b] = await Promise.all([repo.claim(6, 60_000), other.claim(6, 60_000)]);
    const ids = [...a, ...b].map((d) => d.id);
    expect(new Set(ids).size).toBe(10);
    expect([...a, ...b].every((d) => d.attempt === 1 && d.webhookId === w && d.url === 'https://hooks.example.com/x')).toBe(true);
    expect(await repo.claim(10, 60_000)).toEqual([]);
    // A worker died holding them: once the lease runs out another claims them, as attempt 2.
    await pg.ds.query(`UPDATE webhook_deliveries SET next_attempt_at = now() - interval '1 second' WHERE webhook_id = $1`, [w]);
    const again = await repo.claim(20, 60_000);
    expect(again).toHaveLength(10);
    expect(again.every((d) => d.attempt === 2)).toBe(true);
  });

  it('logs each attempt and settles it; a late answer under an overtaken lease changes nothing', async () => {
    const t = await createTenant(pg.ds);
    const w = await webhook(t, ['flag.updated']);
    await enqueue(t, 1);
    const [first] = await repo.claim(1, 60_000);
    // The lease ran out. Not `= now()`: the column keeps milliseconds, so now() may be stored rounded
    // up past the next claim's now() (a fresh-clone CI run saw that claim find nothing).
    await pg.ds.query(`UPDATE webhook_deliveries SET next_attempt_at = now() - interval '1 second' WHERE webhook_id = $1`, [w]);
    const [overtaking] = await repo.claim(1, 60_000);
    expect(await repo.settle(first!, DELIVERED, { status: 'delivered' }, FAR_PAST)).toEqual({ disabled: false });
    expect(await deliveriesOf(w)).toEqual([{ status: 'pending', attempts: 2, logged: 0 }]);
    await repo.settle(overtaking!, FAILED, { status: 'pending', retryAt: new Date(Date.now() + 60_000) }, FAR_PAST);
    expect(await deliveriesOf(w)).toEqual([{ status: 'pending', attempts: 2, logged: 1 }]);
    expect(await repo.claim(1, 60_000)).toEqual([]);
  });

  it('disables a webhook failing for the whole window, gives up its pending deliveries, and a success in time clears the mark', async () => {
    const t = await createTenant(pg.ds);
    const w = await webhook(t, ['flag.updated']);
    await enqueue(t, 3);
    const [d1, d2] = await repo.claim(2, 60_000);
    // First failure: marked failing, not disabled (the window is not over).
    expect(await repo.settle(d1!, FAILED, { status: 'pending', retryAt: new Date() }, FAR_PAST)).toEqual({ disabled: false });
    const [marked] = (await pg.ds.query(`SELECT enabled, failing_since IS NOT NULL AS failing FROM webhooks WHERE id = $1`, [w])) as Array<{ enabled: boolean; failing: boolean }>;
    expect(marked).toEqual({ enabled: true, failing: true });
    // Failing since before the window's start: disabled, with a reason, and nothing left pending.
    await pg.ds.query(`UPDATE webhooks SET failing_since = now() - interval '2 days' WHERE id = $1`, [w]);
    expect(await repo.settle(d2!, FAILED, { status: 'pending', retryAt: new Date() }, new Date(Date.now() - 86_400_000))).toEqual({ disabled: true });
    const [off] = (await pg.ds.query(`SELECT enabled, disabled_at IS NOT NULL AS at, disabled_reason FROM webhooks WHERE id = $1`, [w])) as Array<{ enabled: boolean; at: boolean; disabled_reason: string }>;
    expect(off).toMatchObject({ enabled: false, at: true, disabled_reason: expect.stringContaining('HTTP 500') });
    expect((await deliveriesOf(w)).map((d) => d.status)).toEqual(['failed', 'failed', 'failed']);
    expect(await repo.claim(10, 60_000)).toEqual([]);

    const w2 = await webhook(t, ['flag.deleted']);
    await pg.ds.query(`SELECT webhook_enqueue($1, 'flag.deleted', '{}'::jsonb)`, [t]);
    const [d3] = await repo.claim(1, 60_000);
    await pg.ds.query(`UPDATE webhooks SET failing_since = now() - interval '1 hour' WHERE id = $1`, [w2]);
    await repo.settle(d3!, DELIVERED, { status: 'delivered' }, new Date(Date.now() - 86_400_000));
    expect(await pg.ds.query(`SELECT enabled, failing_since FROM webhooks WHERE id = $1`, [w2])).toEqual([{ enabled: true, failing_since: null }]);
  });

  it('keeps at most 10000 deliveries waiting per webhook, counting each event it then missed', async () => {
    const t = await createTenant(pg.ds);
    const w = await webhook(t, ['flag.updated']);
    // A backlog of 9999 waiting (written directly: one statement enqueueing 10000 would re-count each time), then three events.
    await pg.ds.query(`INSERT INTO webhook_deliveries (tenant_id, webhook_id, event_type, payload) SELECT $1, $2, 'flag.updated', '{}'::jsonb FROM generate_series(1, 9999)`, [t, w]);
    for (let i = 0; i < 3; i++) await enqueue(t, 1);
    const [row] = (await pg.ds.query(`SELECT dropped_events::int AS dropped, (SELECT count(*)::int FROM webhook_deliveries WHERE webhook_id = $1) AS queued FROM webhooks WHERE id = $1`, [w])) as Array<{ dropped: number; queued: number }>;
    expect(row).toEqual({ dropped: 2, queued: 10_000 });
  });

  it('prunes settled deliveries older than the retention, never pending ones, a batch at a time', async () => {
    const t = await createTenant(pg.ds);
    const w = await webhook(t, ['flag.updated']);
    await enqueue(t, 4);
    await pg.ds.query(`UPDATE webhook_deliveries SET created_at = now() - interval '40 days', status = CASE WHEN (payload->'data'->>'n')::int <= 3 THEN 'delivered' ELSE 'pending' END WHERE webhook_id = $1`, [w]);
    const before = new Date(Date.now() - 30 * 86_400_000);
    expect(await repo.prune(before, 2)).toBe(2);
    expect(await repo.prune(before, 2)).toBe(1);
    expect(await repo.prune(before, 2)).toBe(0);
    expect((await deliveriesOf(w)).map((d) => d.status)).toEqual(['pending']);
  });

  it('hears the ledger: credits.low on a low-balance crossing, budget.exceeded once when a month passes its cap', async () => {
    const t = await createTenant(pg.ds, { balance: 10_000 });
    const w = await webhook(t, ['credits.low', 'budget.exceeded']);
    await new LowBalanceRepository(pg.ds).set(t, 7_000);
    await pg.ds.transaction((m) => new BudgetsRepository(pg.ds).set(m, t, 'client', 'ffc_hooks', 3_000));
    const ledger = new UsageLedgerRepository(pg.ds);
    // Each admitted within the cap on its estimate, each debiting more: the second takes the month past it.
    for (const _ of [1, 2]) {
      const r = aReservation(t, 1_000, { clientId: 'ffc_hooks' });
      expect(await ledger.admit([r])).toEqual(['admitted']);
      expect(await ledger.settle([aSettlement(r, 2_000)])).toEqual([true]);
    }
    const events = (await pg.ds.query(`SELECT event_type, payload->'data' AS data FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY event_type`, [w])) as Array<{
      event_type: string;
      data: Record<string, unknown>;
    }>;
    expect(events.map((e) => e.event_type)).toEqual(['budget.exceeded', 'credits.low']);
    expect(events[0]!.data).toMatchObject({ scopeKind: 'client', scopeId: 'ffc_hooks', monthlyCap: 3_000, spent: 4_000 });
    expect(events[1]!.data).toMatchObject({ threshold: 7_000, balance: 6_000 });
  });
});
