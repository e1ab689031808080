/**
 * persistence's queryPool, the way the ledger runs its statements. Tested here rather than in
 * libs/persistence: a test database comes from libs/testing, which itself depends on persistence.
 */
import { createDataSource, queryPool } from '@flagship/persistence';
import { createTestDatabase, type TestDatabase } from '@flagship/testing';
import type { DataSource } from 'typeorm';

let db: TestDatabase;
let ds: DataSource;

beforeAll(async () => {
  db = await createTestDatabase();
  ds = createDataSource({ url: db.url, poolSize: 1 });
  await ds.initialize();
});

afterAll(async () => {
  await ds.destroy();
  await db.drop();
});

describe('queryPool (real Postgres)', () => {
  it('runs a named statement prepared once per connection, and answers its rows', async () => {
    const statement = { name: 'pool_statement_spec', text: 'SELECT $1::int + 1 AS n', values: [41] };
    expect(await queryPool<{ n: number }>(ds, statement)).toEqual([{ n: 42 }]);
    expect(await queryPool<{ n: number }>(ds, { ...statement, values: [1] })).toEqual([{ n: 2 }]);
    // One connection in the pool: the second run reused the statement prepared by the first.
    const prepared = await queryPool<{ name: string }>(ds, { text: 'SELECT name FROM pg_prepared_statements', values: [] });
    expect(prepared.map((p) => p.name)).toEqual(['pool_statement_spec']);
  });

  it('answers the rows of a bare UPDATE ... RETURNING (not TypeORM\'s [rows, count])', async () => {
    await queryPool(ds, { text: 'CREATE TEMP TABLE IF NOT EXISTS pool_spec (n int)', values: [] });
    await queryPool(ds, { text: 'INSERT INTO pool_spec VALUES (1), (2)', values: [] });
    const rows = await queryPool<{ n: number }>(ds, { text: 'UPDATE pool_spec SET n = n * 10 RETURNING n', values: [] });
    expect(rows.map((r) => r.n).sort()).toEqual([10, 20]);
  });

  it('refuses a DataSource that is not initialized, with a clear error', async () => {
    const idle = createDataSource({ url: db.url });
    await expect(queryPool(idle, { text: 'SELECT 1', values: [] })).rejects.toThrow(/initialized Postgres DataSource/);
  });
});
