import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { createTestDatabase } from './test-database';
import { currentTestDatabaseRun, dropRunDatabases, newTestDatabaseRun, TEST_DATABASE_ADMIN_URL, TEST_DATABASE_RUN, testDatabaseName, withAdmin } from './test-database-runs';

const exists = (name: string): Promise<boolean> =>
  withAdmin(async (c) => ((await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount ?? 0) > 0);
const create = (name: string): Promise<void> => withAdmin(async (c) => void (await c.query(`CREATE DATABASE ${name}`)));
const random = (): string => randomBytes(6).toString('hex');

/** Runs `work` with TEST_DATABASE_RUN set to `run` (or unset), as a jest worker of that run would. */
async function inRun<T>(run: string | undefined, work: () => Promise<T>): Promise<T> {
  const before = process.env[TEST_DATABASE_RUN];
  if (run === undefined) delete process.env[TEST_DATABASE_RUN];
  else process.env[TEST_DATABASE_RUN] = run;
  try {
    return await work();
  } finally {
    if (before === undefined) delete process.env[TEST_DATABASE_RUN];
    else process.env[TEST_DATABASE_RUN] = before;
  }
}

describe('the test databases of a jest run', () => {
  it('within a run, drop() cuts what is still connected and leaves the database for the run end', async () => {
    const run = newTestDatabaseRun();
    const db = await inRun(run, createTestDatabase);
    expect(db.name).toBe(testDatabaseName(run, db.name.slice(-12)));
    const held = new Client({ connectionString: db.url });
    await held.connect();
    // pg reports the administrator's termination, then the closed socket.
    const cut = new Promise((resolve) => held.on('error', resolve));
    await db.drop();
    expect(await cut).toBeInstanceOf(Error);
    expect(await exists(db.name)).toBe(true);
    expect(await dropRunDatabases(run)).toEqual([db.name]);
    expect(await exists(db.name)).toBe(false);
  });

  it('outside a run, drop() drops the database at once', async () => {
    const db = await inRun(undefined, createTestDatabase);
    expect(db.name).toMatch(/^flagship_test_[0-9a-f]{12}$/);
    await db.drop();
    expect(await exists(db.name)).toBe(false);
  });

  it("drops the run's own databases and those of runs over a day old, and leaves the others", async () => {
    const now = Date.now();
    const run = newTestDatabaseRun(now);
    const other = newTestDatabaseRun(now - 23 * 3600_000);
    const stale = newTestDatabaseRun(now - 25 * 3600_000);
    const own = [testDatabaseName(run, random()), testDatabaseName(run, random())];
    const others = testDatabaseName(other, random());
    const stales = testDatabaseName(stale, random());
    const unrun = testDatabaseName(undefined, random());
    for (const name of [...own, others, stales, unrun]) await create(name);
    try {
      expect((await dropRunDatabases(run, TEST_DATABASE_ADMIN_URL, 24 * 3600_000, now)).sort()).toEqual([...own, stales].sort());
      expect(await Promise.all([...own, stales].map(exists))).toEqual([false, false, false]);
      expect(await Promise.all([others, unrun].map(exists))).toEqual([true, true]);
    } finally {
      await withAdmin(async (c) => {
        for (const name of [others, unrun]) await c.query(`DROP DATABASE IF EXISTS ${name}`);
      });
    }
  });

  it('refuses a run id it did not make, since it goes into SQL as part of a name', async () => {
    await inRun('x; DROP DATABASE postgres', async () => expect(() => currentTestDatabaseRun()).toThrow(/TEST_DATABASE_RUN must be a run id/));
    await inRun('', async () => expect(currentTestDatabaseRun()).toBeUndefined());
  });
});
