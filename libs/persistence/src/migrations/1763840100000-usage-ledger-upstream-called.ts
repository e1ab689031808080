import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The "upstream called" marker (issue 22): the gateway stamps `upstream_called_at` on a request's
 * `pending` row when it sends the request to the provider, and answers the client only once that
 * stamp is written. A row a crashed gateway left pending is then settled by billing-worker's
 * reconciler at a defensible amount: its reserved estimate when the upstream was called (the
 * provider had the request, and may have answered it), nothing when it was not; either way the row
 * says which (`error_code`). Such rows, when charged, are billable usage like a succeeded row, so the
 * meter's outbox index covers them too.
 *
 * The column is nullable without a default: no table rewrite. The outbox index is rebuilt in the
 * migration's transaction (CREATE INDEX CONCURRENTLY cannot run in one); it is partial over the rows
 * not yet reported, which the meter reports within seconds, so the build is brief.
 *
 * down: the column is dropped and the index restored to succeeded rows only.
 */
export class UsageLedgerUpstreamCalled1763840100000 implements MigrationInterface {
  name = 'UsageLedgerUpstreamCalled1763840100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE usage_ledger ADD COLUMN upstream_called_at timestamptz(3) NULL`);
    await q.query(`DROP INDEX usage_ledger_unmetered_idx`);
    await q.query(
      `CREATE INDEX usage_ledger_unmetered_idx ON usage_ledger (completed_at)
         WHERE status IN ('succeeded', 'abandoned') AND NOT zero_rated AND debit > 0 AND meter_reported_at IS NULL`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX usage_ledger_unmetered_idx`);
    await q.query(
      `CREATE INDEX usage_ledger_unmetered_idx ON usage_ledger (completed_at)
         WHERE status = 'succeeded' AND NOT zero_rated AND debit > 0 AND meter_reported_at IS NULL`,
    );
    await q.query(`ALTER TABLE usage_ledger DROP COLUMN upstream_called_at`);
  }
}
