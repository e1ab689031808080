import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Invitations: adding someone to a tenant by e-mail no longer makes them a member; it leaves a
 * pending invitation that only the owner of that (verified) e-mail can accept or decline. At most
 * one pending invitation per tenant and e-mail. Tenant-side lookups start with tenant_id; the
 * invitee's own lookups go by their e-mail.
 *
 * The users invited the old way (a `pending:<email>` subject and a membership, never signed in)
 * become pending invitations of the same role, and those placeholder users go.
 */
export class Invitations1763800670000 implements MigrationInterface {
  name = 'Invitations1763800670000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE invitations (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        email text NOT NULL,
        role text NOT NULL CHECK (role IN ('admin', 'editor', 'viewer')),
        invited_by uuid REFERENCES users(id) ON DELETE SET NULL,
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'accepted', 'declined')),
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        responded_at timestamptz(3)
      )`);
    await q.query(`CREATE UNIQUE INDEX invitations_pending_key ON invitations (tenant_id, lower(email)) WHERE status = 'pending'`);
    await q.query(`CREATE INDEX invitations_tenant_idx ON invitations (tenant_id, created_at)`);
    await q.query(`CREATE INDEX invitations_invitee_idx ON invitations (lower(email)) WHERE status = 'pending'`);

    await q.query(`
      INSERT INTO invitations (tenant_id, email, role, created_at)
      SELECT ms.tenant_id, u.email, ms.role, ms.created_at
      FROM memberships ms JOIN users u ON u.id = ms.user_id
      WHERE u.idp_subject = 'pending:' || lower(u.email)`);
    await q.query(`DELETE FROM users WHERE idp_subject = 'pending:' || lower(email)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE invitations`);
  }
}
