import type { MigrationInterface, QueryRunner } from 'typeorm';
import { FLAG_DEFINITION_COLUMNS, type FlagDefinitionRow, flagDefinitionFromRow, servedValueDigest } from '../flag-definition-row';

/**
 * Stale flags (CONTRACT.md section 10):
 * - `flag_evaluations`: when each flag was last evaluated per environment, written by the evaluators
 *   in batches (libs/flag-store EvaluationRecorder). A table of its own, narrow, so those upserts
 *   neither rewrite nor lock the flag rows writers lock; keyed tenant first like every tenant table.
 * - `flag_environments.serving_digest` / `serving_one_variation_since`: which one value the
 *   definition serves to everyone (a digest, NULL when it serves several) and since when, kept by
 *   every write (measureFlagDefinitions). Existing rows are read here and, when they serve one value,
 *   dated now: when they started is not known.
 * - `flags (tenant_id, created_at, id)`: the list's order and cursor, which the stale filter pages.
 *
 * down: drops them.
 */
export class FlagLifecycle1763890000000 implements MigrationInterface {
  name = 'FlagLifecycle1763890000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE flag_evaluations (
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        environment_key text NOT NULL,
        flag_key text NOT NULL,
        last_evaluated_at timestamptz(3) NOT NULL,
        PRIMARY KEY (tenant_id, environment_key, flag_key)
      )`);
    await q.query(`ALTER TABLE flag_environments ADD COLUMN serving_digest text, ADD COLUMN serving_one_variation_since timestamptz(3)`);
    await q.query(`CREATE INDEX flags_tenant_created_idx ON flags (tenant_id, created_at, id)`);
    const PAGE = 200;
    let after: { flag_id: string; environment_key: string } | undefined;
    for (;;) {
      const rows: Array<FlagDefinitionRow & { flag_id: string; environment_key: string }> = await q.query(
        `SELECT fe.flag_id, fe.environment_key, ${FLAG_DEFINITION_COLUMNS}
           FROM flag_environments fe JOIN flags f ON f.tenant_id = fe.tenant_id AND f.id = fe.flag_id
          WHERE $1::uuid IS NULL OR (fe.flag_id, fe.environment_key) > ($1::uuid, $2::text)
          ORDER BY fe.flag_id, fe.environment_key LIMIT ${PAGE}`,
        [after?.flag_id ?? null, after?.environment_key ?? null],
      );
      const serving = rows.map((r) => ({ r, digest: servedValueDigest(flagDefinitionFromRow(r)) })).filter((x) => x.digest !== null);
      if (serving.length > 0) {
        await q.query(
          `UPDATE flag_environments fe SET serving_digest = x.digest, serving_one_variation_since = now()
             FROM unnest($1::uuid[], $2::text[], $3::text[]) AS x(flag_id, environment_key, digest)
            WHERE fe.flag_id = x.flag_id AND fe.environment_key = x.environment_key`,
          [serving.map((x) => x.r.flag_id), serving.map((x) => x.r.environment_key), serving.map((x) => x.digest)],
        );
      }
      if (rows.length < PAGE) return;
      after = rows[rows.length - 1];
    }
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX flags_tenant_created_idx`);
    await q.query(`ALTER TABLE flag_environments DROP COLUMN serving_digest, DROP COLUMN serving_one_variation_since`);
    await q.query(`DROP TABLE flag_evaluations`);
  }
}
