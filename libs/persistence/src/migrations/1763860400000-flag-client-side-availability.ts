import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * LaunchDarkly's `clientSideAvailability` per flag (not per environment, as LaunchDarkly keeps it):
 * which client-side keys of orep-server may evaluate the flag. Every existing flag stays server-only,
 * which is what it was. The default is a constant, so the column is added without rewriting the table.
 *
 * down: the column goes; flags are server-only again, as before.
 */
export class FlagClientSideAvailability1763860400000 implements MigrationInterface {
  name = 'FlagClientSideAvailability1763860400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `ALTER TABLE flags ADD COLUMN client_side_availability jsonb NOT NULL DEFAULT '{"usingEnvironmentId": false, "usingMobileKey": false}'::jsonb
         CONSTRAINT flags_client_side_availability_check CHECK (
           jsonb_typeof(client_side_availability -> 'usingEnvironmentId') = 'boolean'
           AND jsonb_typeof(client_side_availability -> 'usingMobileKey') = 'boolean'
           AND client_side_availability - 'usingEnvironmentId' - 'usingMobileKey' = '{}'::jsonb)`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE flags DROP COLUMN client_side_availability`);
  }
}
