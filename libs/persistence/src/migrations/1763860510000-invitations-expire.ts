import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Invitations expire (14 days after they were sent or last re-sent, by default): an expired one can
 * no longer be listed or answered, and no longer counts against the tenant's pending cap. Those
 * pending now expire 14 days after they were created. Withdrawing by inviter (when the inviter
 * loses the admin role) looks them up by tenant and inviter.
 */
export class InvitationsExpire1763860510000 implements MigrationInterface {
  name = 'InvitationsExpire1763860510000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE invitations ADD COLUMN expires_at timestamptz(3)`);
    await q.query(`UPDATE invitations SET expires_at = created_at + interval '14 days'`);
    await q.query(`ALTER TABLE invitations ALTER COLUMN expires_at SET NOT NULL`);
    await q.query(`CREATE INDEX invitations_inviter_idx ON invitations (tenant_id, invited_by) WHERE status = 'pending'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX invitations_inviter_idx`);
    await q.query(`ALTER TABLE invitations DROP COLUMN expires_at`);
  }
}
