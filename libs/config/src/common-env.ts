import { bool, num, port, str, url } from 'envalid';

/** Settings every app reads; each app spreads these into its own schema. */
export const commonEnv = {
  NODE_ENV: str({ choices: ['development', 'test', 'production'], default: 'development' }),
  LOG_LEVEL: str({ choices: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], default: 'info' }),
  HOST: str({ default: '127.0.0.1', desc: 'bind address' }),
  DATABASE_URL: url({ default: 'postgres://postgres@127.0.0.1:5432/flagship' }),
  DATABASE_POOL_SIZE: num({ default: 10 }),
  DATABASE_QUERY_TIMEOUT_MS: num({ default: 5000, desc: 'statement timeout; requests fail fast (503) while Postgres does not answer' }),
  REDIS_URL: url({ default: 'redis://127.0.0.1:6379' }),
  REDIS_KEY_PREFIX: str({ default: 'ff:', desc: 'prefix of every Redis key and channel (tests give each file its own)' }),
  SHUTDOWN_GRACE_MS: num({ default: 10000 }),
  SECRETS_MANAGER_SECRET_ID: str({ default: '' }),
  SECRETS_REFRESH_S: num({ default: 300 }),
  AWS_REGION: str({ default: 'us-east-1' }),
  AWS_ENDPOINT_URL: str({ default: '' }),
  METRICS_ENABLED: bool({ default: true }),
};

export const portEnv = (defaultPort: number) => ({ PORT: port({ default: defaultPort }) });
