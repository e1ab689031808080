import type { MigrationInterface } from 'typeorm';
import { flagDefinitionBytes } from '@flagship/flag-evaluation';
import { createDataSource, FLAG_DEFINITION_COLUMNS, flagDefinitionFromRow, MIGRATIONS } from '@flagship/persistence';
import { createTestDatabase, type TestDatabase } from '@flagship/testing';

const FlagDefinitionBytes = MIGRATIONS.find((m) => m.name === 'FlagDefinitionBytes1763860000000')! as new () => MigrationInterface;

/** The migration on flags stored before sizes were (real Postgres): each row measured as the store will measure it. */
describe('the flag definition bytes migration (FlagDefinitionBytes1763860000000) on stored flags', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it("stores every row's size, in pages, whatever the tenant; down drops the column", async () => {
    const ds = createDataSource({ url: db.url, poolSize: 2 });
    await ds.initialize();
    const runner = ds.createQueryRunner();
    try {
      const tenant = async (name: string): Promise<string> => {
        const [{ id }] = await runner.query(`INSERT INTO tenants (name, primary_email) VALUES ($1, 'ops@acme.test') RETURNING id`, [name]);
        await runner.query(`INSERT INTO environments (tenant_id, key, name) VALUES ($1, 'production', 'Production'), ($1, 'staging', 'Staging')`, [id]);
        return id;
      };
      const acme = await tenant('Acme');
      const globex = await tenant('Globex');
      // 60 flags in 2 environments: more than one page of 50 rows.
      for (let i = 0; i < 30; i++) {
        for (const t of [acme, globex]) {
          const [{ id }] = await runner.query(
            `INSERT INTO flags (tenant_id, key, name, type, default_value, variations) VALUES ($1, $2, $2, 'json', '{}', $3::jsonb) RETURNING id`,
            [t, `f${i}`, JSON.stringify([{ id: 'v', name: 'v', value: { blob: 'é'.repeat(i * 100) }, weight: 0 }])],
          );
          await runner.query(`INSERT INTO flag_environments (tenant_id, flag_id, environment_key, enabled, targets) SELECT $1, $2, key, key = 'production', $3::jsonb FROM environments WHERE tenant_id = $1`, [
            t,
            id,
            JSON.stringify(i % 2 === 0 ? [] : [{ variationId: 'v', values: ['u1', 'u2'] }]),
          ]);
        }
      }
      await new FlagDefinitionBytes().down(runner);
      await new FlagDefinitionBytes().up(runner);

      const rows: Array<Parameters<typeof flagDefinitionFromRow>[0] & { definition_bytes: number }> = await runner.query(
        `SELECT fe.definition_bytes, ${FLAG_DEFINITION_COLUMNS} FROM flags f JOIN flag_environments fe ON fe.flag_id = f.id`,
      );
      expect(rows).toHaveLength(120);
      for (const r of rows) expect(r.definition_bytes).toBe(flagDefinitionBytes(flagDefinitionFromRow(r)));
      expect(Math.max(...rows.map((r) => r.definition_bytes))).toBeGreaterThan(5800); // 'é' counted as 2 bytes
    } finally {
      await runner.release();
      await ds.destroy();
    }
  });
});
