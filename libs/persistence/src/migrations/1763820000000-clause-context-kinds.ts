import { withLegacyReferenceKinds } from '@flagship/flag-evaluation';
import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Clause attributes (and rollout bucketBy) are now read as LaunchDarkly reads them: literally when
 * the clause names no `contextKind`, even when they start with `/`; as attribute references when it
 * does. Before, every `/`-attribute was a reference, so the stored rules that have one get
 * `contextKind: 'user'` and keep their meaning (withLegacyReferenceKinds). Evaluations do not change,
 * so flag versions stay as they are.
 *
 * down: nothing to undo. Code from before reads `/`-attributes as references and ignores
 * `contextKind`, which is what the rules mean with it.
 */
export class ClauseContextKinds1763820000000 implements MigrationInterface {
  name = 'ClauseContextKinds1763820000000';

  async up(q: QueryRunner): Promise<void> {
    // Only rows holding a JSON string that starts with '/' can need it; a page at a time.
    const PAGE = 500;
    let after: { flag_id: string; environment_key: string } | undefined;
    for (;;) {
      const rows: Array<{ tenant_id: string; flag_id: string; environment_key: string; rules: unknown }> = await q.query(
        `SELECT tenant_id, flag_id, environment_key, rules FROM flag_environments
          WHERE rules::text LIKE '%"/%' AND ($1::uuid IS NULL OR (flag_id, environment_key) > ($1::uuid, $2::text))
          ORDER BY flag_id, environment_key LIMIT ${PAGE}`,
        [after?.flag_id ?? null, after?.environment_key ?? null],
      );
      for (const row of rows) {
        const rules = withLegacyReferenceKinds(row.rules);
        if (rules === row.rules) continue;
        await q.query(`UPDATE flag_environments SET rules = $4::jsonb WHERE tenant_id = $1 AND flag_id = $2 AND environment_key = $3`, [
          row.tenant_id,
          row.flag_id,
          row.environment_key,
          JSON.stringify(rules),
        ]);
      }
      if (rows.length < PAGE) return;
      after = rows[rows.length - 1];
    }
  }

  async down(): Promise<void> {
    // See the class comment: the rules mean the same to the code before.
  }
}
