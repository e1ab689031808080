/**
 * Low-balance crossings, through the ledger's own statements on two pg pools (two gateway replicas):
 * settlements from both pools taking the balance across the threshold at once record ONE crossing,
 * further settlements below it none, a grant above the threshold re-arms it, and a grant that leaves
 * the balance at or below it does not.
 */
import type { DataSource } from 'typeorm';
import { createDataSource } from '@flagship/persistence';
import { createTestDatabase, type TestDatabase } from '@flagship/testing';
import { CreditsRepository } from './credits.repository';
import { LowBalanceRepository } from './low-balance.repository';
import { aReservation, aSettlement, balanceOf, createTenant } from './testing/ledger.fixture';
import { type LowBalanceCrossing } from './low-balance.repository';
import { UsageLedgerRepository } from './usage-ledger.repository';

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

describe('low-balance crossings (real Postgres, two pools)', () => {
  const crossingsOf = (tenantId: string) => new LowBalanceRepository(replicas[0]!).crossings(tenantId, { limit: 100 });
  const grant = (tenantId: string, amount: number) =>
    replicas[1]!.transaction((m) => new CreditsRepository(replicas[1]!).grantCredits(m, tenantId, { amount, reason: 'top-up', grantedBy: 'test' }));

  /** `requests` requests of `debit` reserved up front, then settled concurrently from both pools, each in its own statement. */
  async function spendConcurrently(tenantId: string, requests: number, debit: number): Promise<LowBalanceCrossing[]> {
    const repos = replicas.map((ds) => new UsageLedgerRepository(ds));
    const held = Array.from({ length: requests }, () => aReservation(tenantId, debit));
    expect(await repos[0]!.reserve(held)).toEqual(held.map(() => true));
    const results = await Promise.all(held.map((r, i) => repos[i % 2]!.settleBatch([aSettlement(r, debit)])));
    expect(results.every((x) => x.completed[0] === true)).toBe(true);
    return results.flatMap((x) => x.crossings);
  }

  it('one crossing however many concurrent settlements go below, re-armed by a grant above the threshold only', async () => {
    const tenant = await createTenant(replicas[0]!, { balance: 10_000 });
    await new LowBalanceRepository(replicas[0]!).set(tenant, 7_000);

    // 10,000 -> 6,000 in 40 settlements of 100 from two pools: the balance crosses 7,000 once.
    const heard = await spendConcurrently(tenant, 40, 100);
    expect(await balanceOf(replicas[0]!, tenant)).toEqual({ balance: 6_000, reserved: 0 });
    const recorded = await crossingsOf(tenant);
    expect(recorded).toHaveLength(1);
    expect(recorded[0]).toMatchObject({ tenantId: tenant, threshold: 7_000, balance: 7_000 });
    // Exactly the committed crossing was handed back to the one settlement that recorded it.
    expect(heard).toEqual(recorded);
    expect(await new LowBalanceRepository(replicas[0]!).get(tenant)).toMatchObject({ threshold: 7_000, armed: false });

    // A grant that leaves the balance at the threshold does not re-arm: spending more records nothing.
    await grant(tenant, 1_000);
    expect(await new LowBalanceRepository(replicas[0]!).get(tenant)).toMatchObject({ armed: false });
    expect(await spendConcurrently(tenant, 4, 100)).toEqual([]);
    expect(await crossingsOf(tenant)).toHaveLength(1);

    // A grant above it re-arms (6,600 -> 11,600); the next fall (to 6,600) records a second crossing, once.
    await grant(tenant, 5_000);
    expect(await new LowBalanceRepository(replicas[0]!).get(tenant)).toMatchObject({ armed: true });
    const again = await spendConcurrently(tenant, 50, 100);
    expect(again).toHaveLength(1);
    expect(await crossingsOf(tenant)).toHaveLength(2);
  });

  it('the conditional UPDATE records once when two pools settle the crossing in the same instant, in batches', async () => {
    for (let round = 0; round < 5; round++) {
      const tenant = await createTenant(replicas[0]!, { balance: 1_000 });
      await new LowBalanceRepository(replicas[1]!).set(tenant, 900);
      const repos = replicas.map((ds) => new UsageLedgerRepository(ds));
      const held = Array.from({ length: 8 }, () => aReservation(tenant, 50));
      await repos[0]!.reserve(held);
      // Each pool settles half in one statement: both take the balance below 900 (1,000 - 4 x 50 = 800).
      const [a, b] = await Promise.all([repos[0]!.settleBatch(held.slice(0, 4).map((r) => aSettlement(r, 50))), repos[1]!.settleBatch(held.slice(4).map((r) => aSettlement(r, 50)))]);
      expect(a!.crossings.length + b!.crossings.length).toBe(1);
      expect(await crossingsOf(tenant)).toHaveLength(1);
    }
  });

  it('a threshold set at or above the balance is disarmed (no crossing happened), and another tenant is untouched', async () => {
    const low = await createTenant(replicas[0]!, { balance: 500 });
    const other = await createTenant(replicas[0]!, { balance: 500 });
    const repo = new LowBalanceRepository(replicas[0]!);
    expect(await repo.set(low, 500)).toMatchObject({ threshold: 500, armed: false });
    expect(await repo.get(other)).toBeNull();
    const r = aReservation(low, 10);
    await new UsageLedgerRepository(replicas[0]!).reserve([r]);
    expect((await new UsageLedgerRepository(replicas[0]!).settleBatch([aSettlement(r, 10)])).crossings).toEqual([]);
    expect(await crossingsOf(low)).toEqual([]);
    expect(await repo.remove(low)).toBe(true);
    expect(await repo.get(low)).toBeNull();
    // Nothing left to remove: says so (TypeORM's [rows, count] answer made this true as well).
    expect(await repo.remove(low)).toBe(false);
  });
});
