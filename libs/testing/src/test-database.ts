import { createHash, randomBytes } from 'node:crypto';
import { MIGRATIONS, runMigrations } from '@flagship/persistence';
import { currentTestDatabaseRun, TEST_DATABASE_ADMIN_URL, testDatabaseName, withAdmin } from './test-database-runs';

export { TEST_DATABASE_ADMIN_URL } from './test-database-runs';

/** The URL of a database of this cluster by name (a bench reusing a database it kept). */
export function urlFor(database: string): string {
  const u = new URL(TEST_DATABASE_ADMIN_URL);
  u.pathname = `/${database}`;
  return u.toString();
}

/** The template's name changes whenever the migrations do, so a stale template is never used. */
function templateName(): string {
  const fingerprint = createHash('sha1')
    .update(MIGRATIONS.map((m) => `${m.name}:${m.prototype.up.toString()}`).join('\n'))
    .digest('hex')
    .slice(0, 12);
  return `flagship_tpl_${fingerprint}`;
}

/** Creates and migrates the template once per set of migrations; concurrent jest workers wait on a lock. */
async function ensureTemplate(): Promise<string> {
  const name = templateName();
  await withAdmin(async (c) => {
    await c.query('SELECT pg_advisory_lock(7431)');
    try {
      const { rowCount } = await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
      if (rowCount) return;
      const building = `${name}_building`;
      await c.query(`DROP DATABASE IF EXISTS ${building}`);
      await c.query(`CREATE DATABASE ${building}`);
      await runMigrations(urlFor(building));
      await c.query(`ALTER DATABASE ${building} RENAME TO ${name}`);
    } finally {
      await c.query('SELECT pg_advisory_unlock(7431)');
    }
  });
  return name;
}

export interface TestDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

/**
 * A fresh, migrated database for one test file (`CREATE DATABASE ... TEMPLATE`); drop it in afterAll.
 * Within a jest run its drop waits for the run's end (test-database-runs.ts).
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  const template = await ensureTemplate();
  const run = currentTestDatabaseRun();
  const name = testDatabaseName(run, randomBytes(6).toString('hex'));
  await withAdmin(async (c) => {
    for (let attempt = 0; ; attempt++) {
      try {
        await c.query(`CREATE DATABASE ${name} TEMPLATE ${template}`);
        return;
      } catch (err) {
        // Another worker copying the same template at this instant: wait and retry.
        if (attempt >= 20 || !/being accessed by other users/.test((err as Error).message)) throw err;
        await new Promise((r) => setTimeout(r, 100 + attempt * 50));
      }
    }
  });
  return {
    name,
    url: urlFor(name),
    // Within a run, what is left connected is cut (as WITH (FORCE) would), and the drop waits for the run's end.
    drop: () =>
      withAdmin(async (c) => {
        if (run === undefined) await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        else await c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [name]);
      }),
  };
}
