import type { MigrationInterface } from 'typeorm';
import { createDataSource, MIGRATIONS } from '@flagship/persistence';
import { createTestDatabase, type TestDatabase } from '@flagship/testing';

const Segments = MIGRATIONS.find((m) => m.name === 'Segments1763870000000')! as new () => MigrationInterface;

/** The segments migration (real Postgres): tenant isolation in its keys, what its foreign keys take with them, and down. */
describe('the segments migration (Segments1763870000000)', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('leads every index with tenant_id; an environment or tenant deleted takes its segments; down drops both tables and up makes them again', async () => {
    const ds = createDataSource({ url: db.url, poolSize: 2 });
    await ds.initialize();
    const runner = ds.createQueryRunner();
    try {
      const indexes: Array<{ indexname: string; indexdef: string }> = await runner.query(
        `SELECT indexname, indexdef FROM pg_indexes WHERE tablename IN ('segments', 'segment_audit') AND indexname <> 'segment_audit_pkey' ORDER BY indexname`,
      );
      expect(indexes.map((i) => i.indexname)).toEqual(['segment_audit_tenant_idx', 'segments_page_idx', 'segments_pkey', 'segments_tenant_id_id_key']);
      for (const i of indexes) expect([i.indexname, /\(tenant_id[,)]/.test(i.indexdef)]).toEqual([i.indexname, true]);

      const [{ id: tenant }] = await runner.query(`INSERT INTO tenants (name, primary_email) VALUES ('Acme', 'ops@acme.test') RETURNING id`);
      await runner.query(`INSERT INTO environments (tenant_id, key, name) VALUES ($1, 'production', 'P'), ($1, 'staging', 'S')`, [tenant]);
      for (const env of ['production', 'staging']) await runner.query(`INSERT INTO segments (tenant_id, environment_key, key, name, definition) VALUES ($1, $2, 'beta', 'Beta', '{}')`, [tenant, env]);
      await runner.query(`INSERT INTO segment_audit (tenant_id, environment_key, segment_key, action, actor) VALUES ($1, 'staging', 'beta', 'create', 'user:a')`, [tenant]);
      await runner.query(`DELETE FROM environments WHERE tenant_id = $1 AND key = 'staging'`, [tenant]);
      expect(await runner.query(`SELECT environment_key FROM segments WHERE tenant_id = $1`, [tenant])).toEqual([{ environment_key: 'production' }]);
      await runner.query(`DELETE FROM tenants WHERE id = $1`, [tenant]);
      expect(await runner.query(`SELECT count(*)::int AS n FROM segments`)).toEqual([{ n: 0 }]);
      expect(await runner.query(`SELECT count(*)::int AS n FROM segment_audit`)).toEqual([{ n: 0 }]);

      await new Segments().down(runner);
      expect(await runner.query(`SELECT count(*)::int AS n FROM pg_tables WHERE tablename IN ('segments', 'segment_audit')`)).toEqual([{ n: 0 }]);
      await new Segments().up(runner);
      expect(await runner.query(`SELECT count(*)::int AS n FROM pg_tables WHERE tablename IN ('segments', 'segment_audit')`)).toEqual([{ n: 2 }]);
    } finally {
      await runner.release();
      await ds.destroy();
    }
  });
});
