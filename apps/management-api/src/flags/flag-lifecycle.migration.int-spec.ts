import type { MigrationInterface } from 'typeorm';
import { createDataSource, MIGRATIONS } from '@flagship/persistence';
import { createTestDatabase, type TestDatabase } from '@flagship/testing';

const FlagLifecycle = MIGRATIONS.find((m) => m.name === 'FlagLifecycle1763890000000')! as new () => MigrationInterface;

/** The stale-flags migration on flags stored before it (real Postgres): those serving one value are dated, in pages. */
describe('the flag lifecycle migration (FlagLifecycle1763890000000) on stored flags', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('dates the rows serving one value (off, or on with one weighted variation) and leaves those serving several; down and up again', async () => {
    const ds = createDataSource({ url: db.url, poolSize: 2 });
    await ds.initialize();
    const runner = ds.createQueryRunner();
    try {
      const [{ id: tenant }] = await runner.query(`INSERT INTO tenants (name, primary_email) VALUES ('Acme', 'ops@acme.test') RETURNING id`);
      await runner.query(`INSERT INTO environments (tenant_id, key, name) VALUES ($1, 'production', 'Production'), ($1, 'staging', 'Staging')`, [tenant]);
      // 150 flags in 2 environments: more than one page of 200 rows. Every third is split 50/50 and on in production.
      for (let i = 0; i < 150; i++) {
        const split = i % 3 === 0;
        const [{ id }] = await runner.query(`INSERT INTO flags (tenant_id, key, name, type, default_value, variations) VALUES ($1, $2, $2, 'boolean', 'false', $3::jsonb) RETURNING id`, [
          tenant,
          `f${i}`,
          JSON.stringify([
            { id: 'on', name: 'on', value: true, weight: split ? 50 : 100 },
            { id: 'off', name: 'off', value: false, weight: split ? 50 : 0 },
          ]),
        ]);
        await runner.query(`INSERT INTO flag_environments (tenant_id, flag_id, environment_key, enabled) SELECT $1, $2, key, key = 'production' FROM environments WHERE tenant_id = $1`, [tenant, id]);
      }
      await new FlagLifecycle().down(runner);
      await new FlagLifecycle().up(runner);

      const rows: Array<{ key: string; environment_key: string; since: Date | null }> = await runner.query(
        `SELECT f.key, fe.environment_key, fe.serving_one_variation_since AS since FROM flags f JOIN flag_environments fe ON fe.flag_id = f.id`,
      );
      expect(rows).toHaveLength(300);
      const several = rows.filter((r) => r.since === null).map((r) => `${r.key}/${r.environment_key}`).sort();
      expect(several).toEqual(Array.from({ length: 50 }, (_, i) => `f${i * 3}/production`).sort());
      expect(await runner.query(`SELECT count(*)::int AS n FROM flag_evaluations`)).toEqual([{ n: 0 }]);
    } finally {
      await runner.release();
      await ds.destroy();
    }
  });
});
