import type { MigrationInterface } from 'typeorm';
import { createDataSource, MIGRATIONS } from '@flagship/persistence';
import { createTestDatabase, type TestDatabase } from '@flagship/testing';

const TenantsCreatedBy = MIGRATIONS.find((m) => m.name === 'TenantsCreatedBy1763860500000')! as new () => MigrationInterface;

/** The tenants-created-by migration on tenants made before it: who created each is read from the memberships. */
describe('the tenants-created-by migration (TenantsCreatedBy1763860500000) on existing data (real Postgres)', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it("names as creator the member who joined in the tenant's own transaction, whatever their role now; a tenant whose creator left counts against nobody", async () => {
    const ds = createDataSource({ url: db.url, poolSize: 2 });
    await ds.initialize();
    const runner = ds.createQueryRunner();
    try {
      const migration = new TenantsCreatedBy();
      await migration.down(runner);
      const [{ id: maker }, { id: deputy }, { id: late }] = await runner.query(
        `INSERT INTO users (idp_subject, email) VALUES ('s-1', 'maker@acme.test'), ('s-2', 'deputy@acme.test'), ('s-3', 'late@acme.test') RETURNING id`,
      );
      // As management-api creates a tenant: the tenant and its creator's admin membership in one transaction.
      const create = async (name: string, creator: string) => {
        await runner.startTransaction();
        const [{ id }] = await runner.query(`INSERT INTO tenants (name, primary_email) VALUES ($1, 'ops@acme.test') RETURNING id`, [name]);
        await runner.query(`INSERT INTO memberships (tenant_id, user_id, role) VALUES ($1, $2, 'admin')`, [id, creator]);
        await runner.commitTransaction();
        return id as string;
      };
      const steppedDown = await create('Stepped down', maker);
      const left = await create('Left', deputy);
      // created_at keeps milliseconds: whoever joins later joins at least one later, as in use (a CI run
      // once added the next admin within the same millisecond, who then counted as the creator).
      await new Promise((r) => setTimeout(r, 5));
      // Later: a deputy made admin and the maker a viewer (the quota's old escape); the other tenant's creator left it.
      await runner.query(`INSERT INTO memberships (tenant_id, user_id, role) VALUES ($1, $2, 'admin'), ($3, $4, 'admin')`, [steppedDown, deputy, left, late]);
      await runner.query(`UPDATE memberships SET role = 'viewer' WHERE tenant_id = $1 AND user_id = $2`, [steppedDown, maker]);
      await runner.query(`DELETE FROM memberships WHERE tenant_id = $1 AND user_id = $2`, [left, deputy]);
      const [{ id: bare }] = await runner.query(`INSERT INTO tenants (name, primary_email) VALUES ('No members', 'ops@acme.test') RETURNING id`);

      await migration.up(runner);

      const rows: Array<{ id: string; created_by: string | null }> = await runner.query(`SELECT id, created_by FROM tenants`);
      expect(Object.fromEntries(rows.map((r) => [r.id, r.created_by]))).toEqual({ [steppedDown]: maker, [left]: null, [bare]: null });
    } finally {
      await runner.release();
      await ds.destroy();
    }
  });
});
