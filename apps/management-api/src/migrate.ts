import 'reflect-metadata';
import { commonEnv, loadConfig, runMain } from '@flagship/config';
import { databaseTlsSettings, runMigrations } from '@flagship/persistence';

/** `node dist/.../migrate.js`: the migration step of the images and compose (management-api owns the schema). */
void runMain(async () => {
  const config = loadConfig(process.env, {
    DATABASE_URL: commonEnv.DATABASE_URL,
    DATABASE_SSL_MODE: commonEnv.DATABASE_SSL_MODE,
    DATABASE_SSL_CA_FILE: commonEnv.DATABASE_SSL_CA_FILE,
  });
  const applied = await runMigrations(config.DATABASE_URL, databaseTlsSettings(config));
  process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'schema up to date\n');
});
