/**
 * jest's global teardown for every run from the root config: drops the run's test databases, and those
 * of runs killed over a day ago (libs/testing/src/test-database-runs.ts). A run that made none (unit
 * specs only) may have no Postgres to ask: then there is nothing of it to drop.
 */
// Global hooks run outside jest's module registry, where path aliases do not resolve; this file has none.
// eslint-disable-next-line @nx/enforce-module-boundaries
import { currentTestDatabaseRun, dropRunDatabases } from '../../libs/testing/src/test-database-runs';

export default async function globalTeardown(): Promise<void> {
  const run = currentTestDatabaseRun();
  if (run === undefined) return;
  try {
    await dropRunDatabases(run);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ECONNREFUSED') return;
    throw err;
  }
}
