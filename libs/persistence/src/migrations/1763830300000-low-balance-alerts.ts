import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A tenant's low-balance threshold and the crossings recorded under it. `armed` makes a crossing
 * once-per-crossing: the settlement that takes the balance from above the threshold to at or below it
 * flips it to false in a conditional UPDATE (so a second replica's settlement, waiting on the row,
 * finds it already false), and a grant that lifts the balance back above the threshold sets it again.
 */
export class LowBalanceAlerts1763830300000 implements MigrationInterface {
  name = 'LowBalanceAlerts1763830300000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE low_balance_alerts (
        tenant_id uuid PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
        threshold bigint NOT NULL CHECK (threshold >= 0),
        armed boolean NOT NULL DEFAULT true,
        updated_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE low_balance_crossings (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
        threshold bigint NOT NULL,
        balance bigint NOT NULL,
        crossed_at timestamptz(3) NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX low_balance_crossings_tenant_idx ON low_balance_crossings (tenant_id, crossed_at DESC, id DESC)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE low_balance_crossings`);
    await q.query(`DROP TABLE low_balance_alerts`);
  }
}
