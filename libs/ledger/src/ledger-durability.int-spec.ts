/**
 * The gateway's durable mode on real Postgres: the app's pool commits asynchronously (no balance
 * row lock held through a WAL flush), and what must be on disk is made so by a commit on the
 * LedgerDurableConnections that waits for the flush (the "upstream called" stamp, the flush barrier).
 */
import { createDataSource, queryPool } from '@flagship/persistence';
import { createTestDatabase, type TestDatabase } from '@flagship/testing';
import type { DataSource } from 'typeorm';
import { LedgerDurableConnections } from './ledger-durability';
import { aReservation, createTenant } from './testing/ledger.fixture';
import { UsageLedgerRepository } from './usage-ledger.repository';

let db: TestDatabase;
let asyncPool: DataSource;
let durable: LedgerDurableConnections;

beforeAll(async () => {
  db = await createTestDatabase();
  const url = new URL(db.url);
  url.searchParams.set('options', '-c synchronous_commit=off');
  asyncPool = createDataSource({ url: url.toString(), poolSize: 2 });
  await asyncPool.initialize();
  // Given the asynchronous URL on purpose: the durable connections set synchronous_commit on whatever it says.
  durable = await LedgerDurableConnections.open(url.toString(), {}, 2);
});

afterAll(async () => {
  await asyncPool?.destroy();
  await durable?.onApplicationShutdown();
  await db?.drop();
});

const setting = async (ds: DataSource) => (await queryPool<{ s: string }>(ds, { text: "SELECT current_setting('synchronous_commit') AS s", values: [] }))[0]!.s;
/** Where the WAL ends (inserted) and how far it is on disk (flushed). */
const wal = async (ds: DataSource) =>
  (await queryPool<{ inserted: string; flushed: string }>(ds, { text: 'SELECT pg_current_wal_insert_lsn()::text AS inserted, pg_current_wal_flush_lsn()::text AS flushed', values: [] }))[0]!;
/** LSNs as numbers, to compare ('16/B374D848' is 0x16B374D848). */
const lsn = (text: string) => {
  const [hi, lo] = text.split('/');
  return parseInt(hi!, 16) * 2 ** 32 + parseInt(lo!, 16);
};

describe('LedgerDurableConnections and the flush barrier (real Postgres)', () => {
  it('durable connections commit synchronously, whatever DATABASE_URL says; the app pool stays asynchronous', async () => {
    expect(await setting(durable.ds)).toBe('on');
    expect(await setting(asyncPool)).toBe('off');
  });

  it('a flush barrier puts an asynchronous commit made before it on disk', async () => {
    const repo = new UsageLedgerRepository(asyncPool, durable);
    expect(repo.confirmsFlushes).toBe(true);
    const tenant = await createTenant(asyncPool, { balance: 1_000_000 });
    // Reserved (committed asynchronously), then where the WAL ends with that commit in it.
    for (let i = 0; i < 5; i++) expect(await repo.reserve([aReservation(tenant, 10)])).toEqual([true]);
    const after = await wal(asyncPool);
    await repo.flushBarrier();
    expect(lsn((await wal(asyncPool)).flushed)).toBeGreaterThanOrEqual(lsn(after.inserted));
  });

  it('the "upstream called" stamp is itself such a commit: the reservation before it is on disk when it resolves', async () => {
    const repo = new UsageLedgerRepository(asyncPool, durable);
    const tenant = await createTenant(asyncPool, { balance: 1_000_000 });
    const r = aReservation(tenant, 10);
    expect(await repo.reserve([r])).toEqual([true]);
    const after = await wal(asyncPool);
    await repo.markUpstreamCalled([r]);
    expect(lsn((await wal(asyncPool)).flushed)).toBeGreaterThanOrEqual(lsn(after.inserted));
    const [row] = await asyncPool.query(`SELECT upstream_called_at FROM usage_ledger WHERE tenant_id = $1 AND id = $2`, [tenant, r.id]);
    expect(row.upstream_called_at).toBeInstanceOf(Date);
  });

  it('without durable connections the barrier waits for nothing, and says so', async () => {
    const repo = new UsageLedgerRepository(asyncPool);
    expect(repo.confirmsFlushes).toBe(false);
    await expect(repo.flushBarrier()).resolves.toBeUndefined();
  });
});
