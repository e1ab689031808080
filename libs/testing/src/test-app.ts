import { createTestDatabase, type TestDatabase } from './test-database';
import { createTestRedisPrefix, type TestRedisPrefix } from './test-redis';

export interface TestEnvironment {
  db: TestDatabase;
  redis: TestRedisPrefix;
  /** process.env plus this file's database, Redis prefix and quiet logs. */
  env: NodeJS.ProcessEnv;
  teardown(): Promise<void>;
}

/** One test file's own Postgres database and Redis prefix, and the env that points apps at them. */
export async function createTestEnvironment(extra: NodeJS.ProcessEnv = {}): Promise<TestEnvironment> {
  const db = await createTestDatabase();
  const redis = createTestRedisPrefix();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_ENV: 'test',
    LOG_LEVEL: process.env['TEST_LOG_LEVEL'] ?? 'silent',
    DATABASE_URL: db.url,
    DATABASE_POOL_SIZE: '4',
    // Each app's internal port (/metrics, detailed /readyz) on a free port; RunningApp.metricsUrl names it.
    METRICS_PORT: '0',
    REDIS_URL: redis.url,
    REDIS_KEY_PREFIX: redis.prefix,
    // scrypt at N=1024 for client secrets and dev IdP passwords (about 3 ms, not 50): every sign-up
    // hashes a password. The production cost has its own tests (secret-hash.spec, oauth.int-spec).
    SECRET_HASH_SCRYPT_N: '1024',
    ...extra,
  };
  return {
    db,
    redis,
    env,
    teardown: async () => {
      await redis.cleanup();
      await db.drop();
    },
  };
}
