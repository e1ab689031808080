import type { MigrationInterface, QueryRunner } from 'typeorm';

// Timestamps are timestamptz(3) in every table, here and in later migrations: JavaScript Dates hold
// milliseconds, so a keyset cursor's timestamp round-trips exactly.
export class Init1763800000000 implements MigrationInterface {
  name = 'Init1763800000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE tenants (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
        primary_email text NOT NULL,
        contact_name text NOT NULL DEFAULT '',
        is_sandbox boolean NOT NULL DEFAULT false,
        sandbox_expires_at timestamptz(3),
        plan text NOT NULL DEFAULT 'free' CHECK (plan IN ('free', 'standard', 'premium')),
        subscription_status text NOT NULL DEFAULT 'active',
        zero_rated boolean NOT NULL DEFAULT false,
        hosted_provider_allowed boolean NOT NULL DEFAULT false,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        updated_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE tenants');
  }
}
