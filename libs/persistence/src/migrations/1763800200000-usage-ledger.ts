import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The AI gateway's usage ledger (CONTRACT.md section 7): one row per gateway request, written
 * `pending` together with the credit reservation before the provider is called and completed after.
 * billing-worker settles rows left `pending` by a crash (`abandoned`) and reports billable rows to
 * Stripe meter events, using the row itself as the outbox (`meter_reported_at`).
 */
export class UsageLedger1763800200000 implements MigrationInterface {
  name = 'UsageLedger1763800200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE usage_ledger (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        client_id text NOT NULL,
        product_key text NOT NULL,
        -- The provider that served (after any fallback), and the one asked for when they differ.
        provider text NOT NULL,
        requested_provider text,
        model text NOT NULL,
        endpoint text NOT NULL CHECK (endpoint IN ('chat.completions', 'embeddings')),
        stream boolean NOT NULL DEFAULT false,
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed', 'abandoned')),
        -- Micro-credits held on credit_balances.reserved while pending; released when the row completes.
        reserved bigint NOT NULL DEFAULT 0 CHECK (reserved >= 0),
        debit bigint NOT NULL DEFAULT 0 CHECK (debit >= 0),
        zero_rated boolean NOT NULL DEFAULT false,
        zero_rated_reason text,
        input_tokens integer NOT NULL DEFAULT 0 CHECK (input_tokens >= 0),
        output_tokens integer NOT NULL DEFAULT 0 CHECK (output_tokens >= 0),
        -- True when no usage came from the provider and the tokens were estimated from the text.
        usage_estimated boolean NOT NULL DEFAULT false,
        error_code text,
        latency_ms integer,
        request_id text,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        completed_at timestamptz(3),
        -- Set by billing-worker once Stripe accepted the meter event for this row.
        meter_reported_at timestamptz(3)
      )`);
    await q.query(`CREATE INDEX usage_ledger_tenant_idx ON usage_ledger (tenant_id, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX usage_ledger_pending_idx ON usage_ledger (created_at) WHERE status = 'pending'`);
    await q.query(
      `CREATE INDEX usage_ledger_unmetered_idx ON usage_ledger (completed_at)
         WHERE status = 'succeeded' AND NOT zero_rated AND debit > 0 AND meter_reported_at IS NULL`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE usage_ledger');
  }
}
