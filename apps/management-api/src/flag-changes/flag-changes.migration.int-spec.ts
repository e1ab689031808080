import type { MigrationInterface } from 'typeorm';
import { createDataSource, MIGRATIONS } from '@flagship/persistence';
import { createTestDatabase, type TestDatabase } from '@flagship/testing';

const FlagChanges = MIGRATIONS.find((m) => m.name === 'FlagChanges1763880000000')! as new () => MigrationInterface;

/** The approvals and schedules migration (real Postgres): its indexes, what an environment takes with it, its state checks, and down. */
describe('the flag changes migration (FlagChanges1763880000000)', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('leads every index but the executors’ with tenant_id; an environment deleted takes its changes; a state not in the machine is refused; down and up again', async () => {
    const ds = createDataSource({ url: db.url, poolSize: 2 });
    await ds.initialize();
    const runner = ds.createQueryRunner();
    try {
      const indexes: Array<{ indexname: string; indexdef: string }> = await runner.query(
        `SELECT indexname, indexdef FROM pg_indexes WHERE tablename IN ('change_requests', 'scheduled_changes') ORDER BY indexname`,
      );
      expect(indexes.map((i) => i.indexname)).toEqual(['change_requests_flag_idx', 'change_requests_pkey', 'scheduled_changes_due_idx', 'scheduled_changes_flag_idx', 'scheduled_changes_pkey']);
      // The due index is the one cross-tenant read (the executor's claim), and holds only what is still to run.
      for (const i of indexes) expect([i.indexname, /\(tenant_id[,)]/.test(i.indexdef) || /\(execute_at\) WHERE \(state = 'scheduled'::text\)/.test(i.indexdef)]).toEqual([i.indexname, true]);

      const [{ id: tenant }] = await runner.query(`INSERT INTO tenants (name, primary_email) VALUES ('Acme', 'ops@acme.test') RETURNING id`);
      await runner.query(`INSERT INTO environments (tenant_id, key, name) VALUES ($1, 'production', 'P'), ($1, 'staging', 'S')`, [tenant]);
      expect(await runner.query(`SELECT key, require_approval FROM environments WHERE tenant_id = $1 ORDER BY key`, [tenant])).toEqual([
        { key: 'production', require_approval: false },
        { key: 'staging', require_approval: false },
      ]);
      for (const env of ['production', 'staging']) {
        await runner.query(`INSERT INTO change_requests (tenant_id, environment_key, flag_key, patch, base_version, author) VALUES ($1, $2, 'f', '{}', '"1.1"', 'user:a')`, [tenant, env]);
        await runner.query(`INSERT INTO scheduled_changes (tenant_id, environment_key, flag_key, patch, base, execute_at, author) VALUES ($1, $2, 'f', '{}', '{}', now(), 'user:a')`, [tenant, env]);
      }
      await expect(runner.query(`UPDATE change_requests SET state = 'merged' WHERE tenant_id = $1`, [tenant])).rejects.toThrow(/check constraint/);
      await expect(runner.query(`UPDATE scheduled_changes SET state = 'running' WHERE tenant_id = $1`, [tenant])).rejects.toThrow(/check constraint/);
      await runner.query(`DELETE FROM environments WHERE tenant_id = $1 AND key = 'staging'`, [tenant]);
      expect(await runner.query(`SELECT environment_key FROM change_requests WHERE tenant_id = $1`, [tenant])).toEqual([{ environment_key: 'production' }]);
      expect(await runner.query(`SELECT environment_key FROM scheduled_changes WHERE tenant_id = $1`, [tenant])).toEqual([{ environment_key: 'production' }]);

      await new FlagChanges().down(runner);
      expect(await runner.query(`SELECT count(*)::int AS n FROM pg_tables WHERE tablename IN ('change_requests', 'scheduled_changes')`)).toEqual([{ n: 0 }]);
      expect(await runner.query(`SELECT count(*)::int AS n FROM information_schema.columns WHERE table_name = 'environments' AND column_name = 'require_approval'`)).toEqual([{ n: 0 }]);
      await new FlagChanges().up(runner);
      expect(await runner.query(`SELECT count(*)::int AS n FROM pg_tables WHERE tablename IN ('change_requests', 'scheduled_changes')`)).toEqual([{ n: 2 }]);
    } finally {
      await runner.release();
      await ds.destroy();
    }
  });
});
