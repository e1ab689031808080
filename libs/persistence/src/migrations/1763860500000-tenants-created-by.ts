import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Who created each tenant, so the tenants-per-user quota counts what a user created rather than
 * where they are admin (stepping down from admin no longer frees a place).
 *
 * Backfill: a tenant and its creator's admin membership are written in one transaction, so they
 * share the same `now()`; the member whose membership carries the tenant's own creation time is its
 * creator, whatever their role today. A tenant with no such member (the demo tenant, or one whose
 * creator has left) counts against nobody: a guess could fill an innocent user's quota.
 */
export class TenantsCreatedBy1763860500000 implements MigrationInterface {
  name = 'TenantsCreatedBy1763860500000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tenants ADD COLUMN created_by uuid REFERENCES users(id) ON DELETE SET NULL`);
    await q.query(`
      UPDATE tenants t SET created_by = (
        SELECT ms.user_id FROM memberships ms
        WHERE ms.tenant_id = t.id AND ms.created_at = t.created_at
        ORDER BY ms.user_id LIMIT 1
      )`);
    await q.query(`CREATE INDEX tenants_created_by_idx ON tenants (created_by) WHERE created_by IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tenants DROP COLUMN created_by`);
  }
}
