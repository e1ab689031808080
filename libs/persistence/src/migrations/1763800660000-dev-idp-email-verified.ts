import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The dev identity provider can act as a provider that has not verified an e-mail (its tokens'
 * `email_verified`), so the refusal of unverified e-mails is tested. Existing accounts stay verified.
 */
export class DevIdpEmailVerified1763800660000 implements MigrationInterface {
  name = 'DevIdpEmailVerified1763800660000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE dev_idp_accounts ADD COLUMN email_verified boolean NOT NULL DEFAULT true`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE dev_idp_accounts DROP COLUMN email_verified`);
  }
}
