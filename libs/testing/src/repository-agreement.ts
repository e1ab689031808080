import { createDataSource, type DataSource, type DataSourceOptions, withTransaction } from '@flagship/persistence';
import type { InTransaction } from '@flagship/persistence/testing';
import { createTestDatabase, type TestDatabase } from './test-database';

type Hook = (fn: () => Promise<void>) => void;
/**
 * Jest's globals, looked up when called: this library is also compiled into the apps' builds, where
 * Jest's types are not loaded, and loaded by tools that never call these.
 */
const runner = globalThis as unknown as {
  beforeAll: Hook;
  afterAll: Hook;
  beforeEach: Hook;
  describe: { each: <T extends unknown[]>(table: T[]) => (name: string, fn: (...row: T) => void) => void };
};

/**
 * This file's own migrated database and a TypeORM DataSource on it, open from beforeAll to afterAll
 * (the hooks are registered here), for the specs that run a repository over Postgres.
 */
export function testDataSource(options: Pick<DataSourceOptions, 'entities'> = {}): { readonly ds: DataSource; inTransaction: InTransaction } {
  let db: TestDatabase | undefined;
  let ds: DataSource | undefined;
  runner.beforeAll(async () => {
    db = await createTestDatabase();
    ds = createDataSource({ url: db.url, poolSize: 2, ...options });
    await ds.initialize();
  });
  runner.afterAll(async () => {
    await ds?.destroy();
    await db?.drop();
  });
  const opened = (): DataSource => {
    if (!ds) throw new Error('testDataSource is read before beforeAll opened it');
    return ds;
  };
  return {
    get ds() {
      return opened();
    },
    inTransaction: (work) => withTransaction(opened(), work),
  };
}

/**
 * The same cases against a repository's real implementation and its in-memory twin (or any two
 * implementations of one port), so the unit specs that run on the twin prove what the real one
 * does. Each case gets a fresh subject from `make` (after its `reset`, when it has one).
 */
export function describeAgreement<S extends object>(implementations: Record<string, () => S>, cases: (subject: () => S) => void): void {
  runner.describe.each(Object.entries(implementations))('%s', (_name, make) => {
    let s: S | undefined;
    runner.beforeEach(async () => {
      s = make();
      await (s as { reset?: () => Promise<void> }).reset?.();
    });
    cases(() => s!);
  });
}
