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
 *   request by its id within its tenant (`POST /v1/feedback`). usage_ledger is partitioned by month
 *   (1763905000000): each index is made on the parent alone, built CONCURRENTLY on every partition
 *   (writes go on) and attached; partitions made later get it from the parent.
 *
 * Not in a transaction (CREATE INDEX CONCURRENTLY cannot run in one); every step can be run again.
 * down: drops them.
 */
export class ModelBindingRoutes1763910000000 implements MigrationInterface {
  name = 'ModelBindingRoutes1763910000000';
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE gateway_bindings ADD COLUMN IF NOT EXISTS environment_key text NOT NULL DEFAULT 'production'`);
    await q.query(`
      CREATE TABLE IF NOT EXISTS gateway_binding_audit (
        id bigserial PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        product_key text NOT NULL,
        action text NOT NULL,
        actor text NOT NULL,
        changes jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX IF NOT EXISTS gateway_binding_audit_idx ON gateway_binding_audit (tenant_id, product_key, id)`);
    await q.query(`ALTER TABLE usage_ledger ADD COLUMN IF NOT EXISTS route_reason text NULL`);
    await ledgerIndex(q, 'usage_ledger_flag_idx', 'flag_idx', '(tenant_id, flag_key, variation, created_at) WHERE flag_key IS NOT NULL');
    await ledgerIndex(q, 'usage_ledger_request_id_idx', 'request_id_idx', '(tenant_id, request_id)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP INDEX usage_ledger_request_id_idx');
    await q.query('DROP INDEX usage_ledger_flag_idx');
    await q.query('ALTER TABLE usage_ledger DROP COLUMN route_reason');
    await q.query('DROP TABLE gateway_binding_audit');
    await q.query('ALTER TABLE gateway_bindings DROP COLUMN environment_key');
  }
}

/**
 * `name` on usage_ledger: on a partitioned ledger, on the parent alone (invalid until every partition
 * has its own), each partition's built CONCURRENTLY (one left invalid by an interrupted run is built
 * again) and attached; on a plain table, built CONCURRENTLY.
 */
async function ledgerIndex(q: QueryRunner, name: string, suffix: string, definition: string): Promise<void> {
  const [{ partitioned }]: Array<{ partitioned: boolean }> = await q.query(`SELECT relkind = 'p' AS partitioned FROM pg_class WHERE oid = 'usage_ledger'::regclass`);
  if (!partitioned) {
    await buildConcurrently(q, name, 'usage_ledger', definition);
    return;
  }
  await q.query(`CREATE INDEX IF NOT EXISTS ${name} ON ONLY usage_ledger ${definition}`);
  const partitions: Array<{ partition: string }> = await q.query(
    `SELECT c.relname AS partition FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'usage_ledger'::regclass ORDER BY 1`,
  );
  for (const { partition } of partitions) {
    const index = `${partition}_${suffix}`.slice(0, 63);
    await buildConcurrently(q, index, partition, definition);
    const [attached] = await q.query(`SELECT 1 FROM pg_inherits WHERE inhrelid = to_regclass($1) AND inhparent = to_regclass($2)`, [index, name]);
    if (!attached) await q.query(`ALTER INDEX ${name} ATTACH PARTITION ${index}`);
  }
}

async function buildConcurrently(q: QueryRunner, index: string, table: string, definition: string): Promise<void> {
  const [built] = await q.query(`SELECT i.indisvalid AS valid FROM pg_index i WHERE i.indexrelid = to_regclass($1)`, [index]);
  if (built && !built.valid) await q.query(`DROP INDEX CONCURRENTLY ${index}`);
  if (!built || !built.valid) await q.query(`CREATE INDEX CONCURRENTLY ${index} ON ${table} ${definition}`);
}
