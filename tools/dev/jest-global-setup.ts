/**
 * jest's global setup for every run from the root config: names the run whose test databases are
 * dropped together at its end (libs/testing/src/test-database-runs.ts). The workers, started after
 * this, inherit TEST_DATABASE_RUN.
 */
// Global hooks run outside jest's module registry, where path aliases do not resolve; this file has none.
// eslint-disable-next-line @nx/enforce-module-boundaries
import { newTestDatabaseRun, TEST_DATABASE_RUN } from '../../libs/testing/src/test-database-runs';

export default function globalSetup(): void {
  process.env[TEST_DATABASE_RUN] = newTestDatabaseRun();
}
