import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Two columns on usage_ledger (issue 30):
 * - `overrun`: the settlement debited more than the row reserved. Admission holds a request's whole
 *   estimate, so a balance ends at worst one request below zero only while no settlement passes its
 *   reservation; a provider that ignores the output limit breaks that, and the mark (with the
 *   gateway's overrun counter and its alert) makes it visible.
 * - `client_request_id`: the caller's own `x-request-id` when it is a sane token (1 to 128 of
 *   A-Z a-z 0-9 . _ : -, as service-kit accepts it), so a product backend can match its request
 *   to what it was charged (GET /api/usage). A tenant controls it, so the database bounds it too.
 *
 * Neither column rewrites the table (a constant default, a nullable column); the check is added
 * NOT VALID and then validated, so the scan runs under a lock that lets writes go on.
 *
 * down: both columns are dropped (the marks and the callers' ids are lost; debits stay).
 */
export class UsageLedgerOverrunClientRequestId1763860300000 implements MigrationInterface {
  name = 'UsageLedgerOverrunClientRequestId1763860300000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE usage_ledger ADD COLUMN overrun boolean NOT NULL DEFAULT false, ADD COLUMN client_request_id text NULL`);
    await q.query(`ALTER TABLE usage_ledger ADD CONSTRAINT usage_ledger_client_request_id_check CHECK (client_request_id ~ '^[A-Za-z0-9._:-]{1,128}$') NOT VALID`);
    await q.query(`ALTER TABLE usage_ledger VALIDATE CONSTRAINT usage_ledger_client_request_id_check`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE usage_ledger DROP COLUMN overrun, DROP COLUMN client_request_id`);
  }
}
