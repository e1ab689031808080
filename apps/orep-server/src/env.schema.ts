import { ConfigError, commonEnv, loadConfig, makeValidator, port, str } from '@flagship/config';
import { isUuid } from '@flagship/domain';
import { DEFAULT_FLAG_MAX_BYTES } from '@flagship/flag-evaluation';


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

const positiveInteger = makeValidator<number>((input) => {
  const n = Number(input);
  if (input.trim() === '' || !Number.isSafeInteger(n) || n <= 0) throw new Error(`Invalid positive integer input: "${input}"`);
  return n;
});

/** '' or an http(s) origin with an optional path prefix and no query: the SSE URL is built on it. */
const publicUrl = makeValidator<string>((input) => {
  if (input === '') return input;
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    throw new Error(`Invalid URL input: "${input}"`);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') {
    throw new Error(`Invalid public URL input: "${input}" (expected http(s)://host[:port][/prefix], no query)`);
  }
  return input.replace(/\/+$/, '');
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
  OREP_FLAG_MAX_BYTES: positiveInteger({
    default: DEFAULT_FLAG_MAX_BYTES,
    desc: 'bytes of one flag\'s definition (its JSON); a flag past it is not served (Postgres) or refuses the file; keep it at least management-api\'s FLAG_MAX_BYTES',
  }),
  OREP_FLAG_SET_MAX_BYTES: positiveInteger({
    default: 64 * 1024 * 1024,
    desc: 'bytes of all the flags served; a set (or file) past it is refused and the last good one kept; a file over 4 times this is not even read',
  }),
  OREP_RATE_LIMIT_RPS: nonNegativeInteger({ default: 0, desc: 'evaluation requests per second per client address; 0 = no limit' }),
  OREP_SSE_MAX_CONNECTIONS: nonNegativeInteger({
    default: 10000,
    desc: 'OFREP push: SSE connections this process holds at once (more are refused 503); 0 = no push (no eventStreams, no SSE route)',
  }),
  OREP_SSE_MAX_PER_ADDRESS: nonNegativeInteger({
    default: 1000,
    desc: 'OFREP push: SSE connections per client address (more are refused 429; see TRUST_PROXY); 0 = no per-address limit',
  }),
  OREP_SSE_MAX_BUFFER_BYTES: positiveInteger({
    default: 65536,
    desc: 'OFREP push: a stream whose unsent bytes exceed this (its client does not read) is closed',
  }),
  OREP_SSE_HEARTBEAT_S: positiveNumber({ default: 15, desc: 'OFREP push: seconds between comment heartbeats on each stream' }),
  OREP_SSE_TOKEN_TTL_S: positiveInteger({ default: 900, desc: 'OFREP push: lifetime in seconds of the token in the SSE URL (browsers cannot send headers)' }),
  OREP_SSE_INACTIVITY_DELAY_S: positiveInteger({ default: 120, desc: 'OFREP push: inactivityDelaySec told to providers (close the stream after this long hidden)' }),
  OREP_PUBLIC_URL: publicUrl({ default: '', desc: 'the origin clients reach this server at (https://flags.example.com), for the SSE URL; empty = from each request Host' }),
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
  if (raw.OREP_FLAG_MAX_BYTES > raw.OREP_FLAG_SET_MAX_BYTES) {
    throw new ConfigError(`invalid configuration: OREP_FLAG_MAX_BYTES (${raw.OREP_FLAG_MAX_BYTES}) must not be more than OREP_FLAG_SET_MAX_BYTES (${raw.OREP_FLAG_SET_MAX_BYTES})`);
  }
  return { ...raw, sourceMode };
}

export type OrepServerConfig = ReturnType<typeof loadOrepServerConfig>;
