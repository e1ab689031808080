import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The gateway's Anthropic Messages and OpenAI Responses routes (issue 23) are recorded under their
 * own endpoint, `messages` and `responses`, so usage reports tell which API a product backend used
 * (both are served by a provider's chat completions). The check is widened: added NOT VALID and then
 * validated, so the table is scanned under a lock that lets writes go on, not under the ALTER's.
 *
 * down: rows of the new endpoints are recorded as `chat.completions` (the upstream call they made),
 * and the narrow check restored.
 */
export class UsageLedgerAgentEndpoints1763850000000 implements MigrationInterface {
  name = 'UsageLedgerAgentEndpoints1763850000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE usage_ledger DROP CONSTRAINT usage_ledger_endpoint_check`);
    await q.query(
      `ALTER TABLE usage_ledger ADD CONSTRAINT usage_ledger_endpoint_check CHECK (endpoint IN ('chat.completions', 'embeddings', 'messages', 'responses')) NOT VALID`,
    );
    await q.query(`ALTER TABLE usage_ledger VALIDATE CONSTRAINT usage_ledger_endpoint_check`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`UPDATE usage_ledger SET endpoint = 'chat.completions' WHERE endpoint IN ('messages', 'responses')`);
    await q.query(`ALTER TABLE usage_ledger DROP CONSTRAINT usage_ledger_endpoint_check`);
    await q.query(`ALTER TABLE usage_ledger ADD CONSTRAINT usage_ledger_endpoint_check CHECK (endpoint IN ('chat.completions', 'embeddings'))`);
  }
}
