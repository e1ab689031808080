import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The gateway's WAL flush barrier (libs/ledger UsageLedgerRepository.flushBarrier). The gateway's
 * ledger statements that lock a tenant's balance row commit asynchronously (synchronous_commit off:
 * the lock is released at once, not held through a WAL flush); what must be durable is then made so
 * by a later commit that waits for the flush, since the WAL is flushed in order and one flush covers
 * every record before it. That commit must write WAL (Postgres skips the flush of a transaction that
 * wrote none, even one with a transaction id), so it upserts one tiny row per database connection
 * here: no two connections touch the same row, so a barrier never waits for another's lock.
 *
 * down: the table is dropped (the gateway then cannot confirm settlements in its durable mode).
 */
export class LedgerFlushBarriers1763840200000 implements MigrationInterface {
  name = 'LedgerFlushBarriers1763840200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE ledger_flush_barriers (
      backend_pid integer PRIMARY KEY,
      flushed_at timestamptz(3) NOT NULL
    )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE ledger_flush_barriers`);
  }
}
