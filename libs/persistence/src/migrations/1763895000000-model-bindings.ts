import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Model rollouts run by flags (CONTRACT.md section 11), the schema its parts share:
 * - `gateway_bindings`: a gateway route (product key) bound to a JSON flag whose variations name
 *   `{model, provider?, params?}`; one per product key and tenant, versioned like flags
 *   (`If-Match`). `model_alias` narrows it to requests asking for that model; `rollout_plan` is the
 *   guarded rollout's stages and guards, `spend_caps` the monthly cap per variation.
 * - `usage_ledger` attribution: the flag key, version and variation that chose the model, the
 *   context kind evaluated, and the time to the first token of a stream (the report's latency).
 * - `usage_feedback`: a quality signal a client attaches to a request it made (`POST /v1/feedback`),
 *   one per request (a later one replaces it).
 *
 * down: drops them.
 */
export class ModelBindings1763895000000 implements MigrationInterface {
  name = 'ModelBindings1763895000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE gateway_bindings (
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        product_key text NOT NULL,
        flag_key text NOT NULL,
        model_alias text,
        rollout_plan jsonb,
        spend_caps jsonb,
        version integer NOT NULL DEFAULT 1,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        updated_at timestamptz(3) NOT NULL DEFAULT now(),
        PRIMARY KEY (tenant_id, product_key)
      )`);
    await q.query(`CREATE INDEX gateway_bindings_flag_idx ON gateway_bindings (tenant_id, flag_key)`);
    await q.query(`
      ALTER TABLE usage_ledger
        ADD COLUMN flag_key text NULL,
        ADD COLUMN flag_version integer NULL,
        ADD COLUMN variation text NULL,
        ADD COLUMN context_kind text NULL,
        ADD COLUMN first_token_ms integer NULL`);
    await q.query(`
      CREATE TABLE usage_feedback (
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        request_id text NOT NULL,
        client_id text NOT NULL,
        score double precision NOT NULL,
        label text,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        PRIMARY KEY (tenant_id, request_id)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE usage_feedback');
    await q.query(
      'ALTER TABLE usage_ledger DROP COLUMN flag_key, DROP COLUMN flag_version, DROP COLUMN variation, DROP COLUMN context_kind, DROP COLUMN first_token_ms',
    );
    await q.query('DROP TABLE gateway_bindings');
  }
}
