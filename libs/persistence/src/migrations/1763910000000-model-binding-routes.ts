import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What the gateway's binding of a route to a flag needs beyond 1763895000000-model-bindings:
 * - `gateway_bindings.environment_key`: the environment whose flag the gateway evaluates (the
 *   `X-Environment` of the binding's PUT, default production, as every flag read).
 * - `gateway_binding_audit`: who bound, changed or unbound a route, and what changed (as flag_audit).
 * - `usage_ledger.route_reason`: why a bound request did not get the variation its flag evaluated
 *   to (the flag missing or not JSON, a malformed variation, a model or provider the tenant may not
 *   use, the variation's spend cap): null when it did, so the report can show fallbacks.
 * - two indexes: the rows of one flag variation this month (the spend cap's sum, the report), and a
 *   request by its id within its tenant (`POST /v1/feedback`).
 *
 * down: drops them.
 */
export class ModelBindingRoutes1763910000000 implements MigrationInterface {
  name = 'ModelBindingRoutes1763910000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE gateway_bindings ADD COLUMN environment_key text NOT NULL DEFAULT 'production'`);
    await q.query(`
      CREATE TABLE gateway_binding_audit (
        id bigserial PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        product_key text NOT NULL,
        action text NOT NULL,
        actor text NOT NULL,
        changes jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX gateway_binding_audit_idx ON gateway_binding_audit (tenant_id, product_key, id)`);
    await q.query(`ALTER TABLE usage_ledger ADD COLUMN route_reason text NULL`);
    await q.query(`CREATE INDEX usage_ledger_flag_idx ON usage_ledger (tenant_id, flag_key, variation, created_at) WHERE flag_key IS NOT NULL`);
    await q.query(`CREATE INDEX usage_ledger_request_id_idx ON usage_ledger (tenant_id, request_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP INDEX usage_ledger_request_id_idx');
    await q.query('DROP INDEX usage_ledger_flag_idx');
    await q.query('ALTER TABLE usage_ledger DROP COLUMN route_reason');
    await q.query('DROP TABLE gateway_binding_audit');
    await q.query('ALTER TABLE gateway_bindings DROP COLUMN environment_key');
  }
}
