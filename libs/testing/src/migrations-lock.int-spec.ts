/**
 * persistence's runMigrations, run twice at once on one empty database, as two releases' migration
 * Jobs (or a plain Job applied twice) would: they take turns on an advisory lock, so one applies
 * every migration and the other finds nothing left, instead of both applying the same list.
 * Tested here rather than in libs/persistence: the admin connection comes from libs/testing.
 */
import { Client } from 'pg';
import { MIGRATIONS, runMigrations } from '@flagship/persistence';
import { TEST_DATABASE_ADMIN_URL } from './test-database';

jest.setTimeout(60_000);

const name = `flagship_migrate_lock_${process.pid}`;
const admin = new Client({ connectionString: TEST_DATABASE_ADMIN_URL });
const url = (() => {
  const u = new URL(TEST_DATABASE_ADMIN_URL);
  u.pathname = `/${name}`;
  return u.toString();
})();

beforeAll(async () => {
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name}`);
  await admin.query(`CREATE DATABASE ${name}`);
});

afterAll(async () => {
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
});

it('two runs at once: one applies every migration, the other waits and applies none; neither fails', async () => {
  const [a, b] = await Promise.all([runMigrations(url), runMigrations(url)]);
  expect([a.length, b.length].sort((x, y) => x - y)).toEqual([0, MIGRATIONS.length]);
  // And a third run later has nothing to do.
  expect(await runMigrations(url)).toEqual([]);
});
