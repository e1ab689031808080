import type { MigrationInterface } from 'typeorm';
import { createDataSource, MIGRATIONS } from '@flagship/persistence';
import { createTestDatabase, type TestDatabase } from '@flagship/testing';

const Invitations = MIGRATIONS.find((m) => m.name === 'Invitations1763800670000')! as new () => MigrationInterface;

/** The invitations migration on data written the old way: an invited user who never signed in was a placeholder user with a membership. */
describe('the invitations migration (Invitations1763800670000) on existing data (real Postgres)', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('turns each pending placeholder user into a pending invitation of the same role, drops the placeholder, and leaves real members alone', async () => {
    const ds = createDataSource({ url: db.url, poolSize: 2 });
    await ds.initialize();
    const runner = ds.createQueryRunner();
    try {
      const migration = new Invitations();
      // Back to the schema before it (the template database is fully migrated).
      await migration.down(runner);
      const [{ id: tenantId }] = await runner.query(`INSERT INTO tenants (name, primary_email) VALUES ('Acme', 'ops@acme.test') RETURNING id`);
      const [{ id: member }] = await runner.query(`INSERT INTO users (idp_subject, email) VALUES ('sub-1', 'member@acme.test') RETURNING id`);
      const [{ id: placeholder }] = await runner.query(`INSERT INTO users (idp_subject, email) VALUES ('pending:grace@acme.test', 'Grace@acme.test') RETURNING id`);
      await runner.query(`INSERT INTO memberships (tenant_id, user_id, role) VALUES ($1, $2, 'admin'), ($1, $3, 'editor')`, [tenantId, member, placeholder]);

      await migration.up(runner);

      expect(await runner.query(`SELECT tenant_id, email, role, status FROM invitations`)).toEqual([{ tenant_id: tenantId, email: 'Grace@acme.test', role: 'editor', status: 'pending' }]);
      expect(await runner.query(`SELECT id FROM users ORDER BY email`)).toEqual([{ id: member }]);
      expect(await runner.query(`SELECT user_id, role FROM memberships`)).toEqual([{ user_id: member, role: 'admin' }]);
    } finally {
      await runner.release();
      await ds.destroy();
    }
  });
});
