/**
 * The usage rollups answer exactly what a direct aggregate over the ledger's rows answers
 * (docs/decisions/2026-11-29-usage-rollups.md), as a property of the ledger's own statements on random
 * data: two pools reserving, settling (some over their reservation, some failed, some zero-rated) and
 * releasing, the reconciler abandoning and charging stale rows, late settlements of rows the reconciler
 * already took, rows created on both sides of hour and day boundaries, and compactions at random
 * moments, concurrently; compared for random filters (instants on and off the hour, status, model,
 * product key), per product and model and per UTC day, while it runs and after. Then the migration's backfill gives the same answers.
 */
import type { DataSource } from 'typeorm';
import { MIGRATIONS } from '@flagship/persistence';
import { seededRandom } from '@flagship/testing';
import { aReservation, aSettlement, createTenant } from './testing/ledger.fixture';
import { useTwoPools } from './testing/two-pools';
import type { Reservation } from './usage-ledger';
import { UsageLedgerRepository } from './usage-ledger.repository';
import { UsageReconcilerRepository } from './usage-reconciler.repository';
import { UsageRollupsRepository } from './usage-rollups.repository';
import { DAY_MS, HOUR_MS } from './usage-rollup-plan';
import { type UsageFilter, type UsageGroupRow, UsageRepository } from './usage.repository';
import { USAGE_STATUSES } from './usage-row';

jest.setTimeout(120_000);

const pools = useTwoPools();

/** Two days and a bit around a day boundary, in the past (so the reconciler finds every pending row stale). */
const BASE = Date.UTC(2026, 9, 30, 22);
const SPAN_MS = 2 * DAY_MS + 3 * HOUR_MS;
const MODELS = ['fake-chat-1', 'fake-chat-2'];
const PRODUCTS = ['core', 'search'];

const numbers = (groups: UsageGroupRow[]) => groups.map((g) => ({ ...g, requests: Number(g.requests), input_tokens: Number(g.input_tokens), output_tokens: Number(g.output_tokens), debit: Number(g.debit) }));

describe('usage summary from rollups (real Postgres, two pools)', () => {
  let replicas: DataSource[];
  beforeAll(() => {
    replicas = pools();
  });
  const rollups = new UsageRollupsRepository();
  const reconciler = new UsageReconcilerRepository();

  const randomFilter = (rnd: () => number): UsageFilter => {
    // Instants on an hour, a millisecond either side of one, or anywhere; sometimes open.
    const instant = (): Date | undefined => {
      if (rnd() < 0.15) return undefined;
      const t = BASE - HOUR_MS + Math.floor(rnd() * (SPAN_MS + 2 * HOUR_MS));
      const hour = Math.floor(t / HOUR_MS) * HOUR_MS;
      const kind = rnd();
      return new Date(kind < 0.3 ? hour : kind < 0.45 ? hour - 1 : kind < 0.6 ? hour + 1 : t);
    };
    let from = instant();
    let to = instant();
    if (from && to && from > to) [from, to] = [to, from];
    const pickOf = <T>(xs: readonly T[]): T | undefined => (rnd() < 0.6 ? undefined : xs[Math.floor(rnd() * xs.length)]);
    return { from, to, status: pickOf(USAGE_STATUSES), model: pickOf(MODELS), productKey: pickOf(PRODUCTS) };
  };

  const mismatches = async (tenants: string[], rnd: () => number, n: number): Promise<unknown[]> => {
    const wrong: unknown[] = [];
    for (let i = 0; i < n; i++) {
      const tenant = tenants[i % tenants.length]!;
      const filter = i === 0 ? {} : randomFilter(rnd);
      // Per product and model (the summary), or per UTC day too (the console's chart).
      const perDay = i % 3 === 2;
      // One transaction for both reads, so they see the same rows (REPEATABLE READ: one snapshot).
      const [rolled, direct] = await replicas[1]!.transaction('REPEATABLE READ', async (m) => {
        const repo = new UsageRepository(m as unknown as DataSource);
        return [await repo.groups(tenant, filter, perDay), await repo.groupsOfRows(tenant, filter, perDay)];
      });
      if (JSON.stringify(numbers(rolled)) !== JSON.stringify(numbers(direct))) wrong.push({ filter, perDay, rolled, direct });
    }
    return wrong;
  };

  it.each([1, 2, 3])('seed %i: equal to the rows aggregate while the ledger moves, after compaction, and after a backfill', async (seed) => {
    const rnd = seededRandom(seed);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
    const tenants = [await createTenant(replicas[0]!, { balance: 50_000_000 }), await createTenant(replicas[0]!, { balance: 50_000_000 })];
    const repos = replicas.map((ds) => new UsageLedgerRepository(ds));
    const leftPending: Reservation[] = [];
    const seen = { overrun: 0, failed: 0, zeroRated: 0, released: 0, late: 0, lateSkipped: 0, charged: 0, compacted: 0 };
    let running = true;

    // A created_at near an hour boundary as often as not (a row a millisecond before an hour is in the hour before).
    const createdAt = (): Date => {
      const t = BASE + Math.floor(rnd() * SPAN_MS);
      if (rnd() < 0.5) return new Date(t);
      const edge = Math.ceil(t / HOUR_MS) * HOUR_MS;
      return new Date(edge - 1 - Math.floor(rnd() * 3));
    };

    const round = async (repo: UsageLedgerRepository, ds: DataSource) => {
      const batch = Array.from({ length: 1 + Math.floor(rnd() * 5) }, () =>
        aReservation(pick(tenants), 1 + Math.floor(rnd() * 500), {
          model: pick(MODELS),
          productKey: pick(PRODUCTS),
          clientId: pick(['ffc_a', 'ffc_b']),
          zeroRatedReason: rnd() < 0.1 ? 'internal_suite:insights' : null,
        }),
      );
      const admitted = await repo.reserve(batch);
      const held = batch.filter((_, k) => admitted[k]);
      // Rows are pending (in no rollup) while they move to another instant: the test's stand-in for time passing.
      // The repository remembers each row's created_at to name its partition in later statements;
      // moving a row in time (nothing but this test does) tells it too.
      const remembered = (repo as unknown as { written: Map<string, Date> }).written;
      for (const r of held) {
        const at = createdAt();
        await ds.query(`UPDATE usage_ledger SET created_at = $3 WHERE tenant_id = $1 AND id = $2 AND status = 'pending'`, [r.tenantId, r.id, at]);
        remembered.set(r.id, at);
      }
      const sent = held.filter(() => rnd() < 0.6);
      if (sent.length > 0) await repo.markUpstreamCalled(sent);
      const released = held.filter(() => rnd() < 0.1);
      if (released.length > 0) seen.released += (await repo.release(released)).filter(Boolean).length;
      const rest = held.filter((r) => !released.includes(r));
      const later = rest.filter(() => rnd() < 0.25);
      leftPending.push(...later);
      const now = rest.filter((r) => !later.includes(r));
      const settlements = now.map((r) => {
        const failed = rnd() < 0.15;
        // Some over the reservation (a provider ignoring the output limit): kept and marked overrun.
        const debit = failed ? 0 : rnd() < 0.1 ? r.estimate + 1 + Math.floor(rnd() * 100) : Math.floor(rnd() * (r.estimate + 1));
        if (debit > r.estimate) seen.overrun++;
        if (failed) seen.failed++;
        if (r.zeroRatedReason) seen.zeroRated++;
        return aSettlement(r, debit, {
          status: failed ? 'failed' : 'succeeded',
          inputTokens: Math.floor(rnd() * 1000),
          outputTokens: Math.floor(rnd() * 1000),
          cachedTokens: Math.floor(rnd() * 10),
          errorCode: failed ? 'provider_error' : null,
          provider: pick(['inhouse', 'hosted']),
        });
      });
      if (settlements.length > 0) await repo.settle(settlements);
    };

    // Settlements of rows left pending, some after the reconciler abandoned them (skipped: the row is its).
    const lateSettle = async (repo: UsageLedgerRepository) => {
      const take = leftPending.splice(0, Math.floor(rnd() * 4));
      if (take.length === 0) return;
      const done = await repo.settle(take.map((r) => aSettlement(r, Math.floor(rnd() * (r.estimate + 1)), { inputTokens: 3, outputTokens: 4 })));
      seen.late += done.filter(Boolean).length;
      seen.lateSkipped += done.filter((d) => !d).length;
    };

    const replica = async (k: number) => {
      for (let i = 0; i < 25; i++) {
        await round(repos[k]!, replicas[k]!);
        if (rnd() < 0.4) await lateSettle(repos[k]!);
      }
    };
    const background = async () => {
      while (running) {
        const r = rnd();
        if (r < 0.3) {
          const b = await replicas[0]!.transaction((m) => reconciler.abandonStale(m, 0, 3));
          seen.charged += b.charged;
        } else if (r < 0.6) {
          seen.compacted += await replicas[1]!.transaction((m) => rollups.compact(m, 1 + Math.floor(rnd() * 6)));
        }
        await new Promise((res) => setTimeout(res, 3));
      }
    };

    const checks = async () => {
      const wrong: unknown[] = [];
      while (running) wrong.push(...(await mismatches(tenants, rnd, 3)));
      return wrong;
    };
    const bg = background();
    const during = checks();
    await Promise.all([replica(0), replica(1)]);
    await lateSettle(repos[0]!);
    running = false;
    await bg;
    expect(await during).toEqual([]);

    // Deltas not yet compacted, then all of them.
    expect(await mismatches(tenants, rnd, 40)).toEqual([]);
    while ((await replicas[0]!.transaction((m) => rollups.compact(m, 50))) > 0);
    expect(await mismatches(tenants, rnd, 40)).toEqual([]);

    // The run did what it is about.
    const [spread] = await replicas[0]!.query(
      `SELECT count(DISTINCT date_trunc('hour', created_at, 'UTC'))::int AS hours, count(*) FILTER (WHERE status = 'pending')::int AS pending,
              count(*) FILTER (WHERE status = 'abandoned' AND debit > 0)::int AS charged
         FROM usage_ledger WHERE tenant_id = ANY($1::uuid[])`,
      [tenants],
    );
    expect(spread.hours).toBeGreaterThan(20);
    expect(spread.charged).toBeGreaterThan(0);
    expect(seen.overrun + seen.failed + seen.released + seen.late + seen.compacted).toBeGreaterThan(0);
    expect(seen.overrun).toBeGreaterThan(0);
    expect(seen.late + seen.lateSkipped).toBeGreaterThan(0);
    expect(seen.compacted).toBeGreaterThan(0);

    // The migration's backfill, from the rows as they are now, answers the same.
    const migration = MIGRATIONS.find((m) => m.name === 'UsageRollups1763900000000')!;
    const q = replicas[0]!.createQueryRunner();
    try {
      await q.startTransaction();
      await new migration().down(q);
      await new migration().up(q);
      await q.commitTransaction();
    } finally {
      await q.release();
    }
    expect(await mismatches(tenants, rnd, 40)).toEqual([]);
  });
});
