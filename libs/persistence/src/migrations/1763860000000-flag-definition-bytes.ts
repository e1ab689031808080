import { flagDefinitionBytes } from '@flagship/flag-evaluation';
import type { MigrationInterface, QueryRunner } from 'typeorm';
import { type FlagDefinitionRow, flagDefinitionFromRow } from '../flag-definition-row';

/**
 * The definition's columns as they are at this migration, not FLAG_DEFINITION_COLUMNS: a later
 * migration adds columns to that list (client_side_availability, 1763860400000) that do not exist yet
 * here. A column added later reads as absent, which flagDefinitionFromRow takes as its default.
 */
const COLUMNS_HERE = `f.key, f.type, f.default_value, f.variations, f.version AS flag_version,
         fe.enabled, fe.off_value, fe.targets, fe.rules, fe.prerequisites, fe.salt, fe.version AS env_version`;

/**
 * `flag_environments.definition_bytes`: the size of each flag's definition in each environment
 * (flagDefinitionBytes), stored by every write (measureFlagDefinitions) so that the byte quota is
 * one SUM and the flag store can refuse a set over its cap before reading it. Existing rows are
 * measured here, a few at a time: rows stored before any size limit may be large.
 *
 * down: drops the column.
 */
export class FlagDefinitionBytes1763860000000 implements MigrationInterface {
  name = 'FlagDefinitionBytes1763860000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE flag_environments ADD COLUMN definition_bytes integer NOT NULL DEFAULT 0`);
    const PAGE = 50;
    let after: { flag_id: string; environment_key: string } | undefined;
    for (;;) {
      const rows: Array<FlagDefinitionRow & { tenant_id: string; flag_id: string; environment_key: string }> = await q.query(
        `SELECT fe.tenant_id, fe.flag_id, fe.environment_key, ${COLUMNS_HERE}
           FROM flag_environments fe JOIN flags f ON f.tenant_id = fe.tenant_id AND f.id = fe.flag_id
          WHERE $1::uuid IS NULL OR (fe.flag_id, fe.environment_key) > ($1::uuid, $2::text)
          ORDER BY fe.flag_id, fe.environment_key LIMIT ${PAGE}`,
        [after?.flag_id ?? null, after?.environment_key ?? null],
      );
      if (rows.length > 0) {
        await q.query(
          `UPDATE flag_environments fe SET definition_bytes = x.bytes
             FROM unnest($1::uuid[], $2::text[], $3::int[]) AS x(flag_id, environment_key, bytes)
            WHERE fe.flag_id = x.flag_id AND fe.environment_key = x.environment_key`,
          [rows.map((r) => r.flag_id), rows.map((r) => r.environment_key), rows.map((r) => flagDefinitionBytes(flagDefinitionFromRow(r)))],
        );
      }
      if (rows.length < PAGE) return;
      after = rows[rows.length - 1];
    }
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE flag_environments DROP COLUMN definition_bytes`);
  }
}
