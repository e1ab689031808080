import { ConfigError, commonEnv, loadConfig, makeValidator, port, str } from '@flagship/config';
import { isUuid } from '@flagship/domain';


/** '' (unset) or a UUID: tenant_id is a uuid column, so anything else could only fail every query. */
const tenantId = makeValidator<string>((input) => {
  if (input === '' || isUuid(input)) return input.toLowerCase();
  throw new Error(`Invalid tenant id input: "${input}" (expected a UUID)`);
});

const positiveNumber = makeValidator<number>((input) => {
  const n = Number(input);
  if (input.trim() === '' || !Number.isFinite(n) || n <= 0) throw new Error(`Invalid positive number input: "${input}"`);
  return n;
});

const nonNegativeInteger = makeValidator<number>((input) => {
  const n = Number(input);
  if (input.trim() === '' || !Number.isSafeInteger(n) || n < 0) throw new Error(`Invalid non-negative integer input: "${input}"`);
  return n;
});

/** The remote evaluation server's settings (seed section 4, CONTRACT.md section 6). */
export const orepServerEnv = {
  ...commonEnv,
  OREP_HOST: str({ default: '127.0.0.1', desc: 'bind address' }),
  OREP_PORT: port({ default: 8016 }),
  OREP_AUTH_TOKEN: str({ desc: 'the bearer token (or X-API-Key) callers must send' }),
  OREP_TENANT_ID: tenantId({ default: '', desc: 'the tenant served from Postgres' }),
  OREP_ENVIRONMENT: str({ default: 'production', desc: 'the environment served from Postgres' }),
  OREP_FLAGS_FILE: str({ default: '', desc: 'serve flags from this JSON file (watched) instead of Postgres' }),
  OREP_RECONCILE_S: positiveNumber({ default: 30, desc: 'Postgres mode: seconds between full re-syncs that heal missed change messages' }),
  OREP_RATE_LIMIT_RPS: nonNegativeInteger({ default: 0, desc: 'evaluation requests per second per client address; 0 = no limit' }),
};

/**
 * Where the flags come from: a watched file, the tenant's rows in Postgres, or (neither set, outside
 * production) the example flags built into the app, so a bare `npm start` serves something.
 */
export type FlagSourceMode = 'file' | 'postgres' | 'embedded';

export function loadOrepServerConfig(env: NodeJS.ProcessEnv) {
  const raw = loadConfig(env, orepServerEnv);
  if (raw.OREP_AUTH_TOKEN.trim() === '') {
    throw new ConfigError('invalid configuration: OREP_AUTH_TOKEN is invalid (it must not be empty)');
  }
  const sourceMode: FlagSourceMode = raw.OREP_FLAGS_FILE !== '' ? 'file' : raw.OREP_TENANT_ID !== '' ? 'postgres' : 'embedded';
  // Silently serving example flags in production would be worse than not starting.
  if (sourceMode === 'embedded' && raw.NODE_ENV === 'production') {
    throw new ConfigError('invalid configuration: OREP_TENANT_ID or OREP_FLAGS_FILE is required when NODE_ENV=production');
  }
  return { ...raw, sourceMode };
}

export type OrepServerConfig = ReturnType<typeof loadOrepServerConfig>;
