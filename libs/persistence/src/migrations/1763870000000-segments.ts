import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Segments (issue 33, CONTRACT.md section 10): per tenant and environment, as LaunchDarkly keeps
 * them. `definition` holds what evaluators read (included and excluded keys, per kind, rules, salt);
 * `definition_bytes` its size as they hold it, so the byte quota is one SUM as for flags. `id` only
 * orders pages (the cursor names a uuid as flags' does); the key is unique per tenant and environment.
 * Every index leads with tenant_id. `segment_audit` is flag_audit's twin.
 *
 * down: drops both tables.
 */
export class Segments1763870000000 implements MigrationInterface {
  name = 'Segments1763870000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE segments (
        tenant_id uuid NOT NULL,
        environment_key text NOT NULL,
        key text NOT NULL,
        id uuid NOT NULL DEFAULT gen_random_uuid(),
        name text NOT NULL,
        description text NOT NULL DEFAULT '',
        definition jsonb NOT NULL,
        definition_bytes integer NOT NULL DEFAULT 0,
        version integer NOT NULL DEFAULT 1,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        updated_at timestamptz(3) NOT NULL DEFAULT now(),
        PRIMARY KEY (tenant_id, environment_key, key),
        UNIQUE (tenant_id, id),
        FOREIGN KEY (tenant_id, environment_key) REFERENCES environments(tenant_id, key) ON DELETE CASCADE
      )`);
    await q.query(`CREATE INDEX segments_page_idx ON segments (tenant_id, environment_key, created_at, id)`);
    await q.query(`
      CREATE TABLE segment_audit (
        id bigserial PRIMARY KEY,
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        environment_key text NOT NULL,
        segment_key text NOT NULL,
        action text NOT NULL,
        actor text NOT NULL,
        changes jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX segment_audit_tenant_idx ON segment_audit (tenant_id, environment_key, segment_key, id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE segment_audit`);
    await q.query(`DROP TABLE segments`);
  }
}
