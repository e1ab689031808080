import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A ledger row is `pending` exactly while it has no `completed_at`: every way out of `pending` (the
 * gateway's settlement, billing-worker's reconciler) sets both. The gateway finds the rows it
 * settles by `completed_at IS NULL` rather than `status = 'pending'`, so Postgres looks each one up
 * by primary key instead of reading every pending row through usage_ledger_pending_idx (whose
 * entries for rows already settled stay until vacuum: under load a settlement read hundreds of them);
 * this constraint makes the two conditions the same. Existing rows are checked as it is added.
 */
export class UsageLedgerCompletedIffSettled1763800500000 implements MigrationInterface {
  name = 'UsageLedgerCompletedIffSettled1763800500000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE usage_ledger ADD CONSTRAINT usage_ledger_completed_iff_settled CHECK ((status = 'pending') = (completed_at IS NULL))`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE usage_ledger DROP CONSTRAINT usage_ledger_completed_iff_settled`);
  }
}
