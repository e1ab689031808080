import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Prices with provenance: each ledger row records the prices it was charged at (micro-credits per
 * 1,000 tokens, as the gateway's catalogue had them when the request was admitted) and how many of
 * its input tokens the provider reported as cached (`prompt_tokens_details.cached_tokens`, part of
 * `input_tokens`, charged at `cached_input_per_1k` when the model has one). Rows written before have
 * no prices (NULL): what they were charged at was not recorded. `cached_input_per_1k` is NULL when the
 * model has no cached price (cached tokens then cost `input_per_1k`). Adding nullable columns and a
 * column with a constant default rewrites nothing (Postgres 11+), so the table is not locked for long.
 *
 * down: the columns are dropped (their provenance is lost; debits stay as they are).
 */
export class UsageLedgerPrices1763820100000 implements MigrationInterface {
  name = 'UsageLedgerPrices1763820100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE usage_ledger
      ADD COLUMN input_per_1k bigint NULL CHECK (input_per_1k >= 0),
      ADD COLUMN output_per_1k bigint NULL CHECK (output_per_1k >= 0),
      ADD COLUMN cached_input_per_1k bigint NULL CHECK (cached_input_per_1k >= 0),
      ADD COLUMN cached_tokens integer NOT NULL DEFAULT 0 CHECK (cached_tokens >= 0)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE usage_ledger DROP COLUMN input_per_1k, DROP COLUMN output_per_1k, DROP COLUMN cached_input_per_1k, DROP COLUMN cached_tokens`);
  }
}
