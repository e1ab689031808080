import type { Pool, QueryResultRow } from 'pg';
import type { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';

/**
 * A statement sent straight to the DataSource's pg pool. With `name` it is a named prepared
 * statement: pg prepares it once per connection and later runs only bind/execute, so Postgres plans
 * it once per connection (worth it for a hot statement whose planning costs as much as its run).
 * Without `name` it is planned on every run, against the table as it is then (better for a statement
 * whose best plan changes as a table grows). A name must always go with the same text.
 */
export interface PoolStatement {
  name?: string;
  text: string;
  values: unknown[];
}

/**
 * Runs one statement on the pool TypeORM opened for `ds` (its `PostgresDriver.master`), outside any
 * transaction (autocommit), and returns its rows. TypeORM's own `ds.query` cannot name a statement,
 * and answers a bare UPDATE or DELETE with `[rows, count]`; this always answers the rows.
 */
export async function queryPool<R extends QueryResultRow>(ds: DataSource, statement: PoolStatement): Promise<R[]> {
  const { name, text, values } = statement;
  return (await poolOf(ds).query<R>(name === undefined ? { text, values } : { name, text, values })).rows;
}

function poolOf(ds: DataSource): Pool {
  // `master` is the pool TypeORM's PostgresDriver opens on initialize(); it is undefined before that.
  const pool = ds.options.type === 'postgres' ? ((ds.driver as PostgresDriver).master as Pool | undefined) : undefined;
  if (pool === undefined) throw new Error('queryPool needs an initialized Postgres DataSource');
  return pool;
}
