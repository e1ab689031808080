/**
 * The test databases of one jest run, dropped together when it ends instead of one by one as each test
 * file ends. Every drop removes some 600 files, and ext4 then searches past the freshly freed inodes
 * for each file it creates: with drops along the way, CREATE DATABASE made up about 40% of Postgres's
 * CPU in a full run, which took 248 s against 227 s without them
 * (docs/decisions/2026-11-29-ci-time-half.md). Jest's global setup (tools/dev/jest-global-setup.ts)
 * sets TEST_DATABASE_RUN, which its workers inherit; its teardown calls dropRunDatabases. Without it
 * (a bench, or a project's jest config run on its own) each database is dropped as before.
 * No path aliases here: the global setup requires this file outside jest's module registry.
 */
import { Client } from 'pg';
import { randomBytes } from 'node:crypto';

export const TEST_DATABASE_ADMIN_URL = process.env['TEST_DATABASE_ADMIN_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const TEST_DATABASE_RUN = 'TEST_DATABASE_RUN';
const PREFIX = 'flagship_test_';
/** A run's database: the run, then the database's own random part. */
const RUN_DATABASE = /^flagship_test_([0-9a-z]+)_[0-9a-f]{12}$/;
const RUN_ID = /^[0-9a-z]+[0-9a-f]{6}$/;

/** `work` on a connection of its own to the cluster's maintenance database, closed after. */
export async function withAdmin<T>(work: (c: Client) => Promise<T>, adminUrl = TEST_DATABASE_ADMIN_URL): Promise<T> {
  const client = new Client({ connectionString: adminUrl });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** This process's run (TEST_DATABASE_RUN), if any. */
export function currentTestDatabaseRun(): string | undefined {
  const run = process.env[TEST_DATABASE_RUN];
  if (run === undefined || run === '') return undefined;
  if (!RUN_ID.test(run)) throw new Error(`${TEST_DATABASE_RUN} must be a run id from newTestDatabaseRun (got ${run})`);
  return run;
}

export function testDatabaseName(run: string | undefined, random: string): string {
  return `${PREFIX}${run === undefined ? '' : `${run}_`}${random}`;
}

/** A run id: when it started, in seconds (base 36, so a killed run's leftovers can be told by age), and a random part. */
export function newTestDatabaseRun(now = Date.now()): string {
  return `${Math.floor(now / 1000).toString(36)}${randomBytes(3).toString('hex')}`;
}

const DROPS_AT_ONCE = 16;
const startedAt = (run: string): number => parseInt(run.slice(0, -6), 36) * 1000;

/**
 * Drops the databases of `run`, and those of runs that started over `staleAfterMs` ago (killed before
 * their end), sixteen at a time; returns their names. A database still in use is cut off (WITH (FORCE)).
 * Each drop mostly waits on the cluster's own work, which concurrent drops share: 48 databases took
 * 4.9 s four at a time, 3.0 s sixteen at a time (a full run leaves about 80).
 */
export async function dropRunDatabases(run: string, adminUrl = TEST_DATABASE_ADMIN_URL, staleAfterMs = 24 * 3600_000, now = Date.now()): Promise<string[]> {
  const { rows } = await withAdmin((c) => c.query<{ datname: string }>('SELECT datname FROM pg_database WHERE starts_with(datname, $1) ORDER BY datname', [PREFIX]), adminUrl);
  const doomed = rows
    .map((r) => r.datname)
    .filter((name) => {
      const of = RUN_DATABASE.exec(name)?.[1];
      return of !== undefined && RUN_ID.test(of) && (of === run || now - startedAt(of) > staleAfterMs);
    });
  const queue = [...doomed];
  const dropper = (): Promise<void> =>
    withAdmin(async (c) => {
      for (let name = queue.shift(); name !== undefined; name = queue.shift()) await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    }, adminUrl);
  await Promise.all(Array.from({ length: Math.min(DROPS_AT_ONCE, queue.length) }, dropper));
  return doomed;
}
