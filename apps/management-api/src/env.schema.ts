import { stripeEnv } from '@flagship/billing';
import { bool, ConfigError, commonEnv, loadConfig, num, portEnv, str } from '@flagship/config';
import { DEFAULT_FLAG_MAX_BYTES } from '@flagship/flag-evaluation';
import { SCRYPT_COST } from '@flagship/oauth';
import { segmentOf } from './auth/provider-segments';

/** The management API's settings (CONTRACT.md sections 1 to 4). */
export const managementApiEnv = {
  ...commonEnv,
  ...portEnv(3000),
  PUBLIC_BASE_URL: str({ default: '', desc: 'the address clients reach this API at; default http://HOST:PORT' }),
  CONSOLE_DIR: str({ default: 'dist/apps/console', desc: 'the built web console (nx run console:build), served at /console' }),
  IDP_MODE: str({
    choices: ['dev', 'oidc'],
    devDefault: 'dev',
    desc: 'dev: the embedded identity provider (never in production; only listening on loopback (HOST) at a loopback PUBLIC_BASE_URL, unless IDP_DEV_ALLOW_NON_LOOPBACK_HOST or IDP_DEV_ALLOW_PUBLIC)',
  }),
  IDP_DEV_ALLOW_PUBLIC: bool({
    default: false,
    desc: 'allow IDP_MODE=dev at a PUBLIC_BASE_URL (and HOST) that is not loopback: whoever reaches it can sign in as any e-mail, so only on a private network',
  }),
  IDP_DEV_ALLOW_NON_LOOPBACK_HOST: bool({
    default: false,
    desc: 'allow IDP_MODE=dev while HOST listens beyond loopback (0.0.0.0 in a container) when only this machine reaches the port: docker/compose.yaml publishes it on 127.0.0.1',
  }),
  IDP_ISSUER: str({ default: '', desc: 'issuer of user ID tokens (oidc mode)' }),
  IDP_AUDIENCE: str({ default: 'flagship-dev', desc: 'audience of user ID tokens (Firebase: the project id)' }),
  IDP_JWKS_URI: str({ default: '', desc: 'JWKS of the identity provider (oidc mode)' }),
  IDP_CLIENT_ID: str({ default: '', desc: 'the console\'s public OIDC client at the provider (oidc mode; its ID tokens carry this audience, accepted besides IDP_AUDIENCE); empty = no console sign-in' }),
  IDP_SCOPES: str({ default: 'openid email profile', desc: 'scopes the console asks for (oidc mode); openid and email are needed' }),
  IDP_PROVIDER_NAME: str({ default: 'oidc', desc: 'the providerName the console sends to POST /api/v1/auth/signin/{segment}; its segment follows from it (oidc.acme -> oidc)' }),
  IDP_DISPLAY_NAME: str({ default: '', desc: 'the provider as the console\'s button names it ("Sign in with ..."); default the issuer\'s host' }),
  PLATFORM_ADMIN_EMAILS: str({ default: '', desc: 'comma-separated e-mails of platform admins' }),
  OAUTH_ISSUER: str({ default: '', desc: 'iss of access tokens; default PUBLIC_BASE_URL' }),
  OAUTH_AUDIENCE: str({ default: 'flagship-api' }),
  SECRET_HASH_SCRYPT_N: num({
    default: SCRYPT_COST.N,
    desc: `scrypt's N for OAuth client secrets and dev identity provider passwords, a power of two; lower for tests only (refused when NODE_ENV=production), where sign-ups would otherwise spend much of the suite's CPU on it`,
  }),
  OAUTH_SIGNING_KEY: str({ default: '', desc: 'secret: EC P-256 private key (PEM PKCS#8 or JWK); required when NODE_ENV=production; none (development only) = a generated key kept in Postgres' }),
  PRODUCT_KEY_OWN: str({ default: 'core' }),
  PRODUCT_KEYS_INTERNAL: str({ default: 'insights,helpdesk,forms,studio' }),
  PRODUCT_KEYS_LEGACY: str({ default: 'partner_portal' }),
  RATE_LIMIT_FREE: num({ default: 600 }),
  RATE_LIMIT_STANDARD: num({ default: 3000 }),
  RATE_LIMIT_PREMIUM: num({ default: 12000 }),
  RATE_LIMIT_IP_PER_MINUTE: num({ default: 60 }),
  SANDBOX_DAYS: num({ default: 14 }),
  EVALUATE_CALLER_CACHE_MS: num({
    default: 2000,
    desc: 'how long the evaluate routes reuse a caller\'s resolved access; membership and client changes announced on Redis drop it at once, this bounds an unannounced one (at most 5000 keeps the 5 s revocation promise)',
  }),
  QUOTA_FLAGS_PER_TENANT: num({ default: 5000, desc: 'flags one tenant may hold (a LaunchDarkly import counts whole); past it 409 quota-exceeded' }),
  QUOTA_FLAG_BYTES_PER_TENANT: num({
    default: 8 * 1024 * 1024,
    desc: 'bytes of flag definitions one tenant may hold, each environment\'s definition of a flag counted (FLAG_MAX_BYTES measures them); past it 409 quota-exceeded',
  }),
  SCHEDULED_CHANGES_POLL_MS: num({ default: 5000, desc: 'how often each replica looks for scheduled flag changes and guarded rollouts that are due (0 turns both executors off in this replica)' }),
  ROLLOUT_CHECK_MS: num({ default: 60_000, desc: 'how long a running guarded rollout waits between two judgements of its stage (each reads the ledger since the stage began)' }),
  FLAG_MAX_BYTES: num({ default: DEFAULT_FLAG_MAX_BYTES, desc: 'bytes of one flag\'s definition in one environment (its JSON as evaluators hold it); a write past it is 422, a stored flag past it is not evaluated' }),
  FLAG_SET_MAX_BYTES: num({
    default: 8 * 1024 * 1024,
    desc: 'bytes of one environment\'s flags the flag store holds; a set past it is refused (its evaluations and flag stream answer 409 flag-set-too-large); at least QUOTA_FLAG_BYTES_PER_TENANT',
  }),
  STALE_AFTER_DAYS: num({ default: 30, desc: 'days a flag not evaluated, or serving one value to everyone, takes to be listed by GET /api/flags?lifecycle=stale (1..365)' }),
  EVALUATIONS_RECORDED_PER_FLUSH: num({ default: 10000, desc: 'flag-environments whose last evaluation one flush writes (once a minute); past it the oldest of the minute are dropped and counted' }),
  FLAG_STORE_MAX_BYTES: num({ default: 64 * 1024 * 1024, desc: 'bytes of flag definitions the flag store holds in all; the least recently evaluated sets are dropped past it' }),
  QUOTA_SEGMENTS_PER_TENANT: num({ default: 500, desc: 'segments one tenant may hold, each environment\'s counted (a segment lives in one environment); past it 409 quota-exceeded' }),
  QUOTA_SEGMENT_BYTES_PER_TENANT: num({
    default: 8 * 1024 * 1024,
    desc: 'bytes of segment definitions one tenant may hold over all its environments (SEGMENT_MAX_BYTES measures them); past it 409 quota-exceeded',
  }),
  SEGMENT_MAX_BYTES: num({ default: 512 * 1024, desc: 'bytes of one segment\'s definition (its JSON as evaluators hold it); a write past it is 422 naming the field' }),
  SEGMENT_MAX_KEYS: num({
    default: 10_000,
    desc: 'context keys one segment may list, included and excluded, of every kind together (LaunchDarkly\'s own list segments stop at 15,000); a write past it is 422 naming the longest list',
  }),
  QUOTA_ENVIRONMENTS_PER_TENANT: num({ default: 20, desc: 'environments one tenant may hold (the three defaults included)' }),
  QUOTA_WEBHOOKS_PER_TENANT: num({ default: 20, desc: 'outbound webhooks one tenant may hold' }),
  WEBHOOKS_ALLOW_PRIVATE_URLS: bool({ default: false, desc: 'development and tests only (refused when NODE_ENV=production): webhook URLs may be http and name loopback or private hosts' }),
  WEBHOOK_SECRETS_KEY: str({ default: '', devDefault: 'ZGV2ZWxvcG1lbnQtb25seS13ZWJob29rLWtleS0zMmI=', desc: 'secret: 32 bytes in base64 sealing webhook signing secrets (AES-256-GCM); billing-worker needs the same value; none = creating webhooks answers 503' }),
  QUOTA_OAUTH_CLIENTS_PER_TENANT: num({ default: 50, desc: 'OAuth clients (not deleted) one tenant may hold' }),
  QUOTA_BUDGETS_PER_TENANT: num({ default: 100, desc: 'AI budgets (per OAuth client or product key) one tenant may hold' }),
  QUOTA_GATEWAY_BINDINGS_PER_TENANT: num({ default: 20, desc: 'gateway routes (product keys) one tenant may bind to flags' }),
  QUOTA_TENANTS_PER_USER: num({ default: 10, desc: 'tenants one user may create (POST /api/tenants), their sign-up tenant included, whatever their role in them now; sign-up\'s own tenant is always made' }),
  QUOTA_INVITATIONS_PER_TENANT: num({ default: 50, desc: 'pending (unexpired) invitations one tenant may hold; past it 409 quota-exceeded' }),
  INVITATION_TTL_DAYS: num({ default: 14, desc: 'an invitation expires this many days after it is sent (re-inviting the e-mail renews it)' }),
  CHECKOUT_SESSIONS_PER_HOUR: num({ default: 20, desc: 'Stripe Checkout and portal sessions one tenant may start per hour (POST /api/billing/checkout); past it 429 with Retry-After' }),
  USAGE_EXPORTS_PER_TENANT: num({ default: 2, desc: 'usage exports (GET /api/usage/export) one tenant may run at once on one process; past it 429 too-many-exports with Retry-After' }),
  USAGE_EXPORTS_PER_CALLER: num({ default: 3, desc: 'usage exports one person or OAuth client may run at once on one process, across all their tenants; past it 429' }),
  USAGE_EXPORTS_PER_PROCESS: num({ default: 20, desc: 'usage exports one process runs at once; past it 503 exports-full with Retry-After' }),
  USAGE_EXPORT_IDLE_SECONDS: num({ default: 60, desc: 'a usage export whose client reads nothing for this long is closed, so a download nobody reads frees its slot' }),
  FLAG_STREAMS_PER_TENANT_FREE: num({ default: 10, desc: 'flag-data streams (GET /api/flag-stream) a free-plan tenant may hold open on one process (its stream allowance); past it 429' }),
  FLAG_STREAMS_PER_TENANT_STANDARD: num({ default: 50, desc: 'the stream allowance of a standard-plan tenant on one process' }),
  FLAG_STREAMS_PER_TENANT_PREMIUM: num({ default: 200, desc: 'the stream allowance of a premium-plan tenant on one process' }),
  FLAG_STREAMS_PER_USER: num({ default: 10, desc: 'flag-data streams one person (ID token) may hold open on one process across all their tenants; past it 429' }),
  FLAG_STREAMS_PER_CLIENT: num({ default: 200, desc: 'flag-data streams one OAuth client may hold open on one process (its tenant\'s allowance bounds it too); past it 429' }),
  FLAG_STREAMS_PER_ADDRESS: num({
    default: 200,
    desc: 'flag-data streams one client address (an IPv6 /64 counts as one; behind a proxy set TRUST_PROXY) may hold open on one process across tenants; past it 429',
  }),
  FLAG_STREAMS_PER_PROCESS: num({
    default: 5000,
    desc: 'flag-data streams one process holds open; past it a free-plan stream is refused (503 with Retry-After) and a paid-plan one takes the place of the newest free-plan stream',
  }),
  FLAG_STREAM_HEARTBEAT_SECONDS: num({ default: 15, desc: 'a comment line on every flag-data stream this often, so proxies and clients see it alive' }),
  FLAG_STREAM_MAX_AGE_SECONDS: num({
    default: 900,
    desc: 'a flag-data stream is closed after this; the SDK reconnects with a current token and resumes, so a revoked client or removed member is cut off within it',
  }),
  FLAG_STREAM_MAX_BUFFER_BYTES: num({ default: 1_048_576, desc: 'a flag-data stream whose unsent output passes this is closed (a slow consumer) instead of buffered' }),
  ...stripeEnv,
  BILLING_CURRENCY: str({ default: 'usd', desc: 'currency of credit purchases' }),
};

/** localhost, 127.x.x.x or ::1: only this machine reaches it (0.0.0.0, ::, a LAN address are every interface or another). */
export function isLoopbackHost(host: string): boolean {
  const h = host.trim().toLowerCase();
  return h === 'localhost' || h.endsWith('.localhost') || h === '::1' || h === '[::1]' || /^127(?:\.\d{1,3}){3}$/.test(h);
}

/** http(s)://localhost, 127.x.x.x or [::1]: only this machine reaches it. */
export function isLoopbackUrl(address: string): boolean {
  try {
    return isLoopbackHost(new URL(address).hostname);
  } catch {
    return false;
  }
}

const FLAG_STREAM_COUNTS = [
  'FLAG_STREAMS_PER_TENANT_FREE',
  'FLAG_STREAMS_PER_TENANT_STANDARD',
  'FLAG_STREAMS_PER_TENANT_PREMIUM',
  'FLAG_STREAMS_PER_USER',
  'FLAG_STREAMS_PER_CLIENT',
  'FLAG_STREAMS_PER_ADDRESS',
  'FLAG_STREAMS_PER_PROCESS',
] as const;

const list = (v: string): string[] => v.split(',').map((s) => s.trim()).filter((s) => s !== '');

export function loadManagementApiConfig(env: NodeJS.ProcessEnv) {
  const raw = loadConfig(env, managementApiEnv);
  if (raw.IDP_MODE === 'dev' && raw.NODE_ENV === 'production') {
    throw new ConfigError('invalid configuration: IDP_MODE=dev (the embedded identity provider) is refused when NODE_ENV=production');
  }
  if (raw.IDP_MODE === 'oidc' && (raw.IDP_ISSUER === '' || raw.IDP_JWKS_URI === '')) {
    throw new ConfigError('invalid configuration: IDP_ISSUER and IDP_JWKS_URI are required when IDP_MODE=oidc');
  }
  if (raw.IDP_MODE === 'oidc' && !/^https?:\/\/[^/]/.test(raw.IDP_ISSUER)) throw new ConfigError('invalid configuration: IDP_ISSUER must be an http(s) URL');
  const idpSegment = segmentOf(raw.IDP_PROVIDER_NAME);
  if (idpSegment === undefined) throw new ConfigError(`invalid configuration: IDP_PROVIDER_NAME "${raw.IDP_PROVIDER_NAME}" names no federated sign-in provider (oidc, oidc.<name>, google.com, ...)`);
  const scopes = raw.IDP_SCOPES.split(/\s+/).filter((s) => s !== '');
  if (raw.IDP_MODE === 'oidc' && raw.IDP_CLIENT_ID !== '' && !scopes.includes('openid')) throw new ConfigError('invalid configuration: IDP_SCOPES must include openid');
  for (const name of [
    'QUOTA_FLAGS_PER_TENANT',
    'QUOTA_FLAG_BYTES_PER_TENANT',
    'QUOTA_ENVIRONMENTS_PER_TENANT',
    'QUOTA_OAUTH_CLIENTS_PER_TENANT',
    'QUOTA_WEBHOOKS_PER_TENANT',
    'QUOTA_TENANTS_PER_USER',
    'QUOTA_BUDGETS_PER_TENANT',
    'QUOTA_GATEWAY_BINDINGS_PER_TENANT',
    'FLAG_MAX_BYTES',
    'FLAG_SET_MAX_BYTES',
    'FLAG_STORE_MAX_BYTES',
    'QUOTA_INVITATIONS_PER_TENANT',
    'QUOTA_SEGMENTS_PER_TENANT',
    'QUOTA_SEGMENT_BYTES_PER_TENANT',
    'SEGMENT_MAX_BYTES',
    'SEGMENT_MAX_KEYS',
    'INVITATION_TTL_DAYS',
    'CHECKOUT_SESSIONS_PER_HOUR',
    'STALE_AFTER_DAYS',
    'EVALUATIONS_RECORDED_PER_FLUSH',
  ] as const) {
    if (!Number.isInteger(raw[name]) || raw[name] < 1) throw new ConfigError(`invalid configuration: ${name} must be a whole number of at least 1`);
  }
  if (raw.STALE_AFTER_DAYS > 365) throw new ConfigError('invalid configuration: STALE_AFTER_DAYS must be at most 365');
  // A tenant within its quota is never refused by the store, and a set fits the store it is held in.
  for (const [smaller, larger] of [
    ['FLAG_MAX_BYTES', 'FLAG_SET_MAX_BYTES'],
    ['QUOTA_FLAG_BYTES_PER_TENANT', 'FLAG_SET_MAX_BYTES'],
    ['FLAG_SET_MAX_BYTES', 'FLAG_STORE_MAX_BYTES'],
  ] as const) {
    if (raw[smaller] > raw[larger]) throw new ConfigError(`invalid configuration: ${smaller} (${raw[smaller]}) must not be more than ${larger} (${raw[larger]})`);
  }
  for (const name of FLAG_STREAM_COUNTS) {
    if (!Number.isInteger(raw[name]) || raw[name] < 1) throw new ConfigError(`invalid configuration: ${name} must be a whole number of at least 1`);
  }
  for (const name of ['FLAG_STREAM_HEARTBEAT_SECONDS', 'FLAG_STREAM_MAX_AGE_SECONDS', 'FLAG_STREAM_MAX_BUFFER_BYTES'] as const) {
    if (!(raw[name] > 0)) throw new ConfigError(`invalid configuration: ${name} must be more than 0`);
  }
  // Renamed when the allowance became per plan: a value set for the old name would otherwise be ignored without a word.
  if (env['FLAG_STREAMS_PER_TENANT'] !== undefined) {
    throw new ConfigError('invalid configuration: FLAG_STREAMS_PER_TENANT is replaced by FLAG_STREAMS_PER_TENANT_FREE, FLAG_STREAMS_PER_TENANT_STANDARD and FLAG_STREAMS_PER_TENANT_PREMIUM');
  }
  if (!Number.isInteger(raw.SCHEDULED_CHANGES_POLL_MS) || raw.SCHEDULED_CHANGES_POLL_MS < 0) throw new ConfigError('invalid configuration: SCHEDULED_CHANGES_POLL_MS must be a whole number of 0 or more');
  if (!Number.isInteger(raw.ROLLOUT_CHECK_MS) || raw.ROLLOUT_CHECK_MS < 1) throw new ConfigError('invalid configuration: ROLLOUT_CHECK_MS must be a whole number of 1 or more');
  const n = raw.SECRET_HASH_SCRYPT_N;
  if (!Number.isInteger(n) || n < 1024 || n > 1048576 || (n & (n - 1)) !== 0) throw new ConfigError('invalid configuration: SECRET_HASH_SCRYPT_N must be a power of two from 1024 to 1048576');
  if (n < SCRYPT_COST.N && raw.NODE_ENV === 'production') throw new ConfigError(`invalid configuration: SECRET_HASH_SCRYPT_N below ${SCRYPT_COST.N} is refused when NODE_ENV=production`);
  if (raw.WEBHOOKS_ALLOW_PRIVATE_URLS && raw.NODE_ENV === 'production') {
    throw new ConfigError('invalid configuration: WEBHOOKS_ALLOW_PRIVATE_URLS=true is refused when NODE_ENV=production');
  }
  if (raw.WEBHOOK_SECRETS_KEY !== '' && Buffer.from(raw.WEBHOOK_SECRETS_KEY, 'base64').length !== 32) throw new ConfigError('invalid configuration: WEBHOOK_SECRETS_KEY must be 32 bytes in base64');
  if (!(raw.EVALUATE_CALLER_CACHE_MS >= 0)) throw new ConfigError('invalid configuration: EVALUATE_CALLER_CACHE_MS must be 0 or more');
  const publicBaseUrl = (raw.PUBLIC_BASE_URL || `http://${raw.HOST === '0.0.0.0' ? '127.0.0.1' : raw.HOST}:${raw.PORT}`).replace(/\/$/, '');
  // The dev identity provider signs an ID token for any e-mail it is asked for: reachable from a
  // public address (an ingress), anyone could sign in as the platform admin.
  if (raw.IDP_MODE === 'dev' && !raw.IDP_DEV_ALLOW_PUBLIC && !isLoopbackUrl(publicBaseUrl)) {
    throw new ConfigError(
      `invalid configuration: IDP_MODE=dev (the embedded identity provider) is refused at PUBLIC_BASE_URL ${publicBaseUrl}, which is not a loopback address; use IDP_MODE=oidc, or IDP_DEV_ALLOW_PUBLIC=true on a private network`,
    );
  }
  // Listening on every interface puts it on the network whatever PUBLIC_BASE_URL says (a laptop on
  // café Wi-Fi running compose, which published on 0.0.0.0).
  if (raw.IDP_MODE === 'dev' && !raw.IDP_DEV_ALLOW_PUBLIC && !raw.IDP_DEV_ALLOW_NON_LOOPBACK_HOST && !isLoopbackHost(raw.HOST)) {
    throw new ConfigError(
      `invalid configuration: IDP_MODE=dev (the embedded identity provider) is refused while HOST=${raw.HOST} listens beyond loopback; set HOST=127.0.0.1, use IDP_MODE=oidc, or IDP_DEV_ALLOW_NON_LOOPBACK_HOST=true where only this machine reaches the port (a container published on 127.0.0.1)`,
    );
  }
  return {
    ...raw,
    publicBaseUrl,
    idpIssuer: raw.IDP_MODE === 'dev' ? `${publicBaseUrl}/dev/idp` : raw.IDP_ISSUER,
    // The console's ID tokens are for its own client; tokens of other frontends (Firebase: the project id) for IDP_AUDIENCE.
    idpAudiences: [...new Set([raw.IDP_AUDIENCE, raw.IDP_MODE === 'oidc' ? raw.IDP_CLIENT_ID : ''].filter((a) => a !== ''))],
    idpSegment,
    idpScopes: scopes,
    oauthIssuer: raw.OAUTH_ISSUER || publicBaseUrl,
    secretHashCost: { ...SCRYPT_COST, N: raw.SECRET_HASH_SCRYPT_N },
    platformAdminEmails: list(raw.PLATFORM_ADMIN_EMAILS.toLowerCase()),
    internalProductKeys: list(raw.PRODUCT_KEYS_INTERNAL),
    legacyProductKeys: list(raw.PRODUCT_KEYS_LEGACY),
  };
}

export type ManagementApiConfig = ReturnType<typeof loadManagementApiConfig>;
