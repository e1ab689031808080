/**
 * The balance invariants (CONTRACT.md section 7), as a property of the ledger's own statements: many
 * concurrent reserve / settle / release calls from two separate pg pools (as two gateway replicas
 * would), with the reconciler abandoning pending rows at the same time, against one tenant.
 * - the credit left (balance - reserved) never falls below 0 at any instant, so the balance never
 *   ends below minus one request's cost;
 * - nothing stays held: once every request is settled, released or abandoned, reserved is 0;
 * - the debits recorded on the rows add up to the balance's fall, exactly.
 */
import type { DataSource } from 'typeorm';
import { createDataSource } from '@flagship/persistence';
import { createTestDatabase, seededRandom, type TestDatabase } from '@flagship/testing';
import { aReservation, aSettlement, balanceOf, createTenant, ledgerRows } from './testing/ledger.fixture';
import type { Reservation, Settlement } from './usage-ledger';
import { UsageLedgerRepository } from './usage-ledger.repository';
import { UsageReconcilerRepository } from './usage-reconciler.repository';

jest.setTimeout(60_000);

let db: TestDatabase;
let replicas: DataSource[];

beforeAll(async () => {
  db = await createTestDatabase();
  replicas = [createDataSource({ url: db.url, poolSize: 4 }), createDataSource({ url: db.url, poolSize: 4 })];
  for (const ds of replicas) await ds.initialize();
});

afterAll(async () => {
  for (const ds of replicas ?? []) await ds.destroy();
  await db?.drop();
});

const MAX_ESTIMATE = 600;

describe('ledger balance invariants (real Postgres, two pools)', () => {
  const seeds = [1, 2, 3];

  it.each(seeds)('seed %i: credit left never below 0, nothing held at the end, debits equal the fall', async (seed) => {
    const rnd = seededRandom(seed);
    // Which admitted requests are stamped "upstream called": drawn apart, so `rnd` keeps its order.
    const stampRnd = seededRandom(seed + 1000);
    const stamped = new Set<string>();
    const pick = (n: number) => Math.floor(rnd() * n);
    const start = 20_000;
    const tenant = await createTenant(replicas[0]!, { balance: start });
    const repos = replicas.map((ds) => new UsageLedgerRepository(ds));
    const reconciler = new UsageReconcilerRepository();
    const stats = { admitted: 0, refused: 0, released: 0, settled: 0, lateSettles: 0 };
    let running = true;

    // The random draws in the order the scenario has always taken them (a seed replays the same run).
    const reservation = (): Reservation => {
      const estimate = 1 + pick(MAX_ESTIMATE);
      return aReservation(tenant, estimate, { clientId: 'ffc_invariants', zeroRatedReason: rnd() < 0.1 ? 'internal_suite:insights' : null });
    };
    const settlement = (r: Reservation): Settlement => {
      const failed = rnd() < 0.2;
      const inputTokens = pick(100);
      const outputTokens = pick(100);
      // The upstream is asked for no more than was reserved: a request costs at most its estimate.
      const debit = failed ? 0 : pick(r.estimate + 1);
      return aSettlement(r, debit, {
        status: failed ? 'failed' : 'succeeded',
        inputTokens,
        outputTokens,
        latencyMs: pick(50),
        errorCode: failed ? 'provider_error' : null,
      });
    };

    // A replica's request loop: reserve a batch (one, or several in one turn), then settle or release each admitted one.
    const replica = async (repo: UsageLedgerRepository, turns: number) => {
      for (let i = 0; i < turns; i++) {
        const batch = Array.from({ length: 1 + pick(4) }, reservation);
        const admitted = await repo.reserve(batch);
        const held = batch.filter((_, k) => admitted[k]);
        stats.admitted += held.length;
        stats.refused += batch.length - held.length;
        const sent = held.filter(() => stampRnd() < 0.5);
        if (sent.length > 0) {
          for (const r of sent) stamped.add(r.id);
          await repo.markUpstreamCalled(sent);
        }
        const toRelease = held.filter(() => rnd() < 0.15);
        const toSettle = held.filter((r) => !toRelease.includes(r)).map(settlement);
        if (toRelease.length > 0) {
          const gone = await repo.release(toRelease);
          stats.released += gone.filter(Boolean).length;
        }
        if (toSettle.length > 0) {
          const done = await repo.settle(toSettle);
          stats.settled += done.filter(Boolean).length;
          stats.lateSettles += done.filter((d) => !d).length;
        }
      }
    };
    // The reconciler, abandoning every row still pending (as though its gateway had died), from the first pool.
    const reconcile = async () => {
      while (running) {
        await replicas[0]!.transaction((m) => reconciler.abandonStale(m, 0, 5));
        await new Promise((r) => setTimeout(r, 2));
      }
    };
    // Watches the balance row throughout, from the second pool.
    const lows: number[] = [];
    const watch = async () => {
      while (running) {
        const b = await balanceOf(replicas[1]!, tenant);
        lows.push(b.balance - b.reserved);
        if (b.reserved < 0) throw new Error(`reserved fell below 0: ${JSON.stringify(b)}`);
      }
    };

    const background = [reconcile(), watch()];
    await Promise.all(repos.flatMap((repo) => [replica(repo, 40), replica(repo, 40), replica(repo, 40)]));
    running = false;
    await Promise.all(background);

    const end = await balanceOf(replicas[0]!, tenant);
    const rows = await ledgerRows(replicas[0]!, tenant);
    const debited = rows.reduce((sum, r) => sum + Number(r.debit), 0);

    expect(Math.min(...lows)).toBeGreaterThanOrEqual(0);
    expect(end.balance).toBeGreaterThanOrEqual(-MAX_ESTIMATE);
    expect(end.reserved).toBe(0);
    expect(rows.filter((r) => r.status === 'pending')).toEqual([]);
    expect(debited).toBe(start - end.balance);
    // An abandoned row was charged its reservation when its upstream was called (stamped before the
    // reconciler got to it: a stamp on a row already abandoned writes nothing), nothing otherwise, and
    // says which; a zero-rated row debits nothing either way. A released request left no row.
    const abandoned = rows.filter((r) => r.status === 'abandoned');
    const calledOf = (r: (typeof rows)[number]) => r.upstream_called_at !== null;
    const wrong = abandoned.filter((r) =>
      calledOf(r)
        ? Number(r.debit) !== (r.zero_rated ? 0 : Number(r.reserved)) || r.error_code !== 'abandoned_upstream_called' || !r.usage_estimated
        : Number(r.debit) !== 0 || r.error_code !== 'abandoned',
    );
    expect(wrong).toEqual([]);
    expect(rows.filter((r) => calledOf(r) && !stamped.has(r.id))).toEqual([]);
    expect(abandoned.some((r) => calledOf(r) && Number(r.debit) > 0)).toBe(true);
    expect(abandoned.some((r) => !calledOf(r))).toBe(true);
    expect(rows).toHaveLength(stats.admitted - stats.released);
    // The run did what it is about: it drained the credit (refusals), and the reconciler raced the settlements.
    expect(stats.refused).toBeGreaterThan(0);
    expect(stats.settled).toBeGreaterThan(0);
    expect(rows.some((r) => r.status === 'abandoned')).toBe(true);
    expect(lows.length).toBeGreaterThan(10);
  });
});
