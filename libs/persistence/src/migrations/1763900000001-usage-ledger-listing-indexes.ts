import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The indexes GET /api/usage's filters use (UsageRepository.list), each an index range in the page's order. */
const INDEXES: Array<[name: string, definition: string]> = [
  ['usage_ledger_tenant_model_status_idx', '(tenant_id, model, status, created_at DESC, id DESC)'],
  ['usage_ledger_tenant_status_idx', '(tenant_id, status, created_at DESC, id DESC)'],
  ['usage_ledger_tenant_client_request_idx', '(tenant_id, client_request_id) WHERE client_request_id IS NOT NULL'],
];

/**
 * The usage listing's indexes (issue 35; docs/decisions/2026-11-29-usage-rollups.md): model with
 * status, status, and the caller's request id, beside usage_ledger_tenant_idx. Built CONCURRENTLY,
 * so outside a transaction (`transaction = false`): a plain CREATE INDEX would hold off the gateway's
 * reservations and settlements for the whole build (70 s for three at 11 million rows on the
 * development machine). A build that failed halfway leaves an invalid index: dropped and built again.
 *
 * down: drops them.
 */
export class UsageLedgerListingIndexes1763900000001 implements MigrationInterface {
  name = 'UsageLedgerListingIndexes1763900000001';
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    for (const [name, definition] of INDEXES) {
      await q.query(`DROP INDEX CONCURRENTLY IF EXISTS ${name}`);
      await q.query(`CREATE INDEX CONCURRENTLY ${name} ON usage_ledger ${definition}`);
    }
  }

  async down(q: QueryRunner): Promise<void> {
    for (const [name] of INDEXES) await q.query(`DROP INDEX CONCURRENTLY IF EXISTS ${name}`);
  }
}
