import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Approvals and scheduled changes (issue 34, CONTRACT.md section 10).
 * - `environments.require_approval`: a direct change to a flag's settings there is refused (409).
 * - `change_requests`: a PATCH body waiting for a second member, with the flag's version (ETag) it
 *   was made against; applied only while the flag is still at it. `comments` is a bounded jsonb
 *   array (the service caps it), so a request and its discussion are read in one row.
 * - `scheduled_changes`: a PATCH body and `base` (the values its fields had when scheduled, to tell
 *   a conflicting change at execution). Executors claim due rows across tenants with FOR UPDATE SKIP
 *   LOCKED; the partial index holds only what is still to run, so claiming stays one index probe.
 * Every other index leads with tenant_id; both tables go with their environment.
 *
 * down: drops both tables and the column.
 */
export class FlagChanges1763880000000 implements MigrationInterface {
  name = 'FlagChanges1763880000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE environments ADD COLUMN require_approval boolean NOT NULL DEFAULT false`);
    await q.query(`
      CREATE TABLE change_requests (
        tenant_id uuid NOT NULL,
        environment_key text NOT NULL,
        flag_key text NOT NULL,
        id uuid NOT NULL DEFAULT gen_random_uuid(),
        patch jsonb NOT NULL,
        base_version text NOT NULL,
        execute_at timestamptz(3),
        state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'approved', 'applied', 'rejected', 'stale')),
        author text NOT NULL,
        comments jsonb NOT NULL DEFAULT '[]',
        decided_by text,
        decided_at timestamptz(3),
        applied_by text,
        applied_at timestamptz(3),
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        updated_at timestamptz(3) NOT NULL DEFAULT now(),
        PRIMARY KEY (tenant_id, id),
        FOREIGN KEY (tenant_id, environment_key) REFERENCES environments(tenant_id, key) ON DELETE CASCADE
      )`);
    await q.query(`CREATE INDEX change_requests_flag_idx ON change_requests (tenant_id, environment_key, flag_key, created_at, id)`);
    await q.query(`
      CREATE TABLE scheduled_changes (
        tenant_id uuid NOT NULL,
        environment_key text NOT NULL,
        flag_key text NOT NULL,
        id uuid NOT NULL DEFAULT gen_random_uuid(),
        patch jsonb NOT NULL,
        base jsonb NOT NULL,
        execute_at timestamptz(3) NOT NULL,
        author text NOT NULL,
        approved_by text,
        state text NOT NULL DEFAULT 'scheduled' CHECK (state IN ('scheduled', 'applied', 'failed', 'cancelled')),
        reason text,
        finished_at timestamptz(3),
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        PRIMARY KEY (tenant_id, id),
        FOREIGN KEY (tenant_id, environment_key) REFERENCES environments(tenant_id, key) ON DELETE CASCADE
      )`);
    await q.query(`CREATE INDEX scheduled_changes_flag_idx ON scheduled_changes (tenant_id, environment_key, flag_key, execute_at, id)`);
    await q.query(`CREATE INDEX scheduled_changes_due_idx ON scheduled_changes (execute_at) WHERE state = 'scheduled'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE scheduled_changes`);
    await q.query(`DROP TABLE change_requests`);
    await q.query(`ALTER TABLE environments DROP COLUMN require_approval`);
  }
}
