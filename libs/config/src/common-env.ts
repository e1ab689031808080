import { bool, makeValidator, num, port, str } from 'envalid';
import { tracingEnv } from '@flagship/tracing';

/**
 * How many reverse proxies in front of the app to believe: the client address is read that many
 * hops from the right of X-Forwarded-For (as Express's `trust proxy` does for a number). 0 trusts
 * none; more hops than really exist let a client choose its own address, and so its own budget.
 */
const proxyHops = makeValidator<number>((input) => {
  const n = Number(input);
  if (!/^\d+$/.test(input.trim()) || !Number.isSafeInteger(n) || n > 16) throw new Error(`Invalid proxy hop count input: "${input}" (expected a whole number from 0 to 16)`);
  return n;
});

/** '' (false: no listener) or a TCP port; 0 takes any free port (tests). False, not undefined: envalid refuses an undefined result. */
const optionalPort = makeValidator<number | false>((input) => {
  if (input.trim() === '') return false;
  const n = Number(input);
  if (!/^\d+$/.test(input.trim()) || n > 65535) throw new Error(`Invalid port input: "${input}"`);
  return n;
});

/**
 * A URL that may hold a password (DATABASE_URL, REDIS_URL): refused when it does not parse or has
 * another scheme, without the value in the message (envalid's url() quotes it, and start-up errors
 * go to the logs).
 */
const credentialUrl = (schemes: string[]) =>
  makeValidator<string>((input) => {
    let u: URL;
    try {
      u = new URL(input);
    } catch {
      throw new Error('not a URL (the value is not shown: it may hold a password)');
    }
    if (!schemes.includes(u.protocol.slice(0, -1))) throw new Error(`expected a ${schemes.join(': or ')}: URL, got ${u.protocol}`);
    return input;
  });

/** Settings every app reads; each app spreads these into its own schema. */
export const commonEnv = {
  NODE_ENV: str({ choices: ['development', 'test', 'production'], default: 'development' }),
  LOG_LEVEL: str({ choices: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], default: 'info' }),
  HOST: str({ default: '127.0.0.1', desc: 'bind address' }),
  DATABASE_URL: credentialUrl(['postgres', 'postgresql'])({ default: 'postgres://postgres@127.0.0.1:5432/flagship' }),
  DATABASE_SSL_MODE: str({
    choices: ['', 'disable', 'require', 'verify-ca', 'verify-full'],
    default: '',
    desc: "TLS to Postgres, libpq's sslmode meanings; empty = DATABASE_URL's sslmode, else disable",
  }),
  DATABASE_SSL_CA_FILE: str({ default: '', desc: 'PEM bundle of the CAs that may sign the Postgres server certificate (a mounted secret)' }),
  DATABASE_POOL_SIZE: num({ default: 10 }),
  DATABASE_QUERY_TIMEOUT_MS: num({ default: 5000, desc: 'statement timeout; requests fail fast (503) while Postgres does not answer' }),
  REDIS_URL: credentialUrl(['redis', 'rediss'])({ default: 'redis://127.0.0.1:6379' }),
  REDIS_KEY_PREFIX: str({ default: 'ff:', desc: 'prefix of every Redis key and channel (tests give each file its own)' }),
  SHUTDOWN_GRACE_MS: num({ default: 10000 }),
  SECRETS_MANAGER_SECRET_ID: str({ default: '' }),
  SECRETS_REFRESH_S: num({ default: 300 }),
  AWS_REGION: str({ default: 'us-east-1' }),
  AWS_ENDPOINT_URL: str({ default: '' }),
  METRICS_ENABLED: bool({ default: true }),
  TRUST_PROXY: proxyHops({ default: 0, desc: 'reverse proxies in front of the app (the ingress: 1) whose X-Forwarded-For is believed; 0 = none' }),
  METRICS_PORT: optionalPort({
    default: false,
    desc: 'internal port serving GET /metrics and the detailed /readyz (never routed by the ingress); empty = not served',
  }),
  // OpenTelemetry traces (libs/tracing): off unless an OTLP endpoint is set.
  ...tracingEnv,
};

export const portEnv = (defaultPort: number) => ({ PORT: port({ default: defaultPort }) });
