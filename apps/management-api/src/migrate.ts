import 'reflect-metadata';
import { commonEnv, loadConfig, runMain } from '@flagship/config';
import { runMigrations } from '@flagship/persistence';

/** `node dist/.../migrate.js`: the migration step of the images and compose (management-api owns the schema). */
void runMain(async () => {
  const { DATABASE_URL } = loadConfig(process.env, { DATABASE_URL: commonEnv.DATABASE_URL });
  const applied = await runMigrations(DATABASE_URL);
  process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'schema up to date\n');
});
