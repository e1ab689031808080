import { bool, ConfigError, commonEnv, loadConfig, num, portEnv, str } from '@flagship/config';
import { INTERNAL_PRODUCT_KEYS, isPlan, LEGACY_PRODUCT_KEYS, OWN_PRODUCT_KEY, type Plan } from '@flagship/domain';
import { parseModelCatalogue } from './models/model-catalogue';
import { providerEnv } from './providers/provider.env';
import type { ProviderKey } from './providers/provider.types';

/** The AI gateway's settings (CONTRACT.md sections 1 and 7). */
export const aiGatewayEnv = {
  ...commonEnv,
  ...portEnv(3001),
  ...providerEnv,
  OAUTH_ISSUER: str({ devDefault: 'http://127.0.0.1:3000', desc: "iss of the access tokens accepted: management-api's OAUTH_ISSUER (its public base URL by default)" }),
  CONSOLE_BILLING_URL: str({
    default: '',
    desc: "where a 402 insufficient_credits or budget_exceeded sends the caller (to buy credits, or to a tenant admin for the budget): the web console's billing page; default OAUTH_ISSUER/console/billing (management-api's public base URL, where it serves the console)",
  }),
  OAUTH_AUDIENCE: str({ default: 'flagship-api', desc: "aud of the access tokens accepted: management-api's OAUTH_AUDIENCE" }),
  PRODUCT_KEY_OWN: str({ default: OWN_PRODUCT_KEY }),
  PRODUCT_KEYS_INTERNAL: str({ default: INTERNAL_PRODUCT_KEYS.join(',') }),
  PRODUCT_KEYS_LEGACY: str({ default: LEGACY_PRODUCT_KEYS.join(',') }),
  PROVIDER_DEFAULT: str({ choices: ['inhouse', 'hosted'], default: 'inhouse', desc: 'the provider when a request names none' }),
  PROVIDER_HOSTED_PRODUCTS: str({ default: '', desc: 'comma-separated product keys allowed the hosted provider (approved experiments)' }),
  PROVIDER_HOSTED_EMERGENCY: bool({ default: false, desc: 'allow the hosted provider for everyone, and as fallback when inhouse fails' }),
  GATEWAY_MODELS: str({
    default: '',
    desc: 'JSON: [{"id","provider"?,"inputPer1k","outputPer1k","cachedInputPer1k"?}] prices in micro-credits per 1,000 tokens (cachedInputPer1k: input tokens the provider reports cached, at most inputPer1k); empty = the built-in catalogue',
  }),
  GATEWAY_RATE_LIMIT_RPM: num({ default: 6000, desc: 'requests per OAuth client per minute' }),
  GATEWAY_RATE_LIMIT_TPM: num({ default: 2_000_000, desc: 'tokens (estimated input + max output) per OAuth client per minute' }),
  GATEWAY_TENANT_RATE_LIMIT_RPM: str({
    default: 'free=600,standard=6000,premium=60000',
    desc: "requests per tenant per minute (all its clients together) by plan, as plan=limit pairs; a plan left out keeps its default",
  }),
  GATEWAY_DEFAULT_MAX_OUTPUT_TOKENS: num({
    default: 1024,
    desc: 'output tokens reserved (per choice) for a chat request that sets no max_tokens, and the max_completion_tokens then sent upstream',
  }),
  // OpenAI's dearest image, gpt-4o-mini at high detail, is 48,169 tokens.
  GATEWAY_IMAGE_TOKENS: num({ default: 50_000, desc: "input tokens an image part counts in a request's estimate (its URL's bytes do not)" }),
  // Image URLs (docs/decisions/2026-11-29-media-urls.md).
  GATEWAY_MEDIA_FETCH_PROVIDERS: str({
    default: 'inhouse',
    desc: "comma-separated providers that would fetch image URLs themselves from inside the operator's network: a request that may go to one has its https images fetched by the gateway (public addresses only, no redirects) and sent as data: URLs; '' turns it off",
  }),
  GATEWAY_MEDIA_MAX_BYTES: num({ default: 5 * 1024 * 1024, desc: "the most bytes of a request's fetched images (together), and of one data: URL image" }),
  GATEWAY_MEDIA_MAX_FETCHES: num({ default: 4, desc: 'https image URLs a request may have fetched' }),
  GATEWAY_MEDIA_MAX_CONCURRENT: num({ default: 8, desc: 'requests holding fetched images at once per replica (their memory is held until they end); past it, 503 with Retry-After' }),
  GATEWAY_MEDIA_FETCH_TIMEOUT_MS: num({ default: 10_000, desc: "the longest a request's images may take to fetch, all together" }),
  GATEWAY_MEDIA_ALLOW_LOOPBACK: bool({ default: false, desc: 'development and tests only (refused when NODE_ENV=production): image URLs may name loopback addresses and any port' }),
  GATEWAY_LEDGER_SYNCHRONOUS_COMMIT: str({
    choices: ['on', 'off'],
    default: 'on',
    desc: "on: every answer waits until its ledger row (reservation and 'upstream called' stamp) is flushed to Postgres' WAL, and a settlement counts as written once flushed; off: nothing waits for a flush (a Postgres crash can lose the last moments' billing); see docs/ai-gateway.md, 'What is durable, and when'",
  }),
  GATEWAY_SETTLE_GATHER_MS: num({
    default: 20,
    desc: 'settlements (the ledger row completed, the real cost debited) gather this long and are written in one statement; the answer never waits for them',
  }),
  GATEWAY_TENANT_CACHE_MS: num({ default: 60_000, desc: 'tenants and entitlements cached this long at most (changes arrive at once through Redis)' }),
};

const list = (v: string): string[] =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');

export function loadAiGatewayConfig(env: NodeJS.ProcessEnv) {
  const raw = loadConfig(env, aiGatewayEnv);
  if (raw.GATEWAY_MEDIA_ALLOW_LOOPBACK && raw.NODE_ENV === 'production') {
    throw new ConfigError('invalid configuration: GATEWAY_MEDIA_ALLOW_LOOPBACK=true is refused when NODE_ENV=production');
  }
  let models;
  try {
    models = parseModelCatalogue(raw.GATEWAY_MODELS);
  } catch (err) {
    throw new ConfigError(`invalid configuration: GATEWAY_MODELS ${(err as Error).message}`);
  }
  return {
    ...raw,
    models,
    tenantRateLimits: parseTenantLimits(raw.GATEWAY_TENANT_RATE_LIMIT_RPM),
    internalProductKeys: list(raw.PRODUCT_KEYS_INTERNAL),
    legacyProductKeys: list(raw.PRODUCT_KEYS_LEGACY),
    hostedProducts: list(raw.PROVIDER_HOSTED_PRODUCTS),
    mediaFetchProviders: parseProviders(raw.GATEWAY_MEDIA_FETCH_PROVIDERS),
    mediaPolicy: { maxBytes: raw.GATEWAY_MEDIA_MAX_BYTES, allowLoopback: raw.GATEWAY_MEDIA_ALLOW_LOOPBACK },
    consoleBillingUrl: raw.CONSOLE_BILLING_URL || `${raw.OAUTH_ISSUER.replace(/\/$/, '')}/console/billing`,
  };
}

/** GATEWAY_MEDIA_FETCH_PROVIDERS: provider keys; anything else stops the app with the variable named. */
function parseProviders(value: string): ProviderKey[] {
  const keys = list(value);
  const unknown = keys.find((k) => k !== 'inhouse' && k !== 'hosted');
  if (unknown !== undefined) throw new ConfigError(`invalid configuration: GATEWAY_MEDIA_FETCH_PROVIDERS has "${unknown}"; expected inhouse and/or hosted`);
  return keys as ProviderKey[];
}

/** The gateway's own defaults: a tenant of any plan may use at least one client's budget (GATEWAY_RATE_LIMIT_RPM, 6000) on a paid plan. */
const TENANT_RPM_DEFAULTS: Readonly<Record<Plan, number>> = { free: 600, standard: 6000, premium: 60000 };

/** `free=600,standard=6000`: plan=limit pairs over the defaults; anything else stops the app with the variable named. */
function parseTenantLimits(value: string): Record<Plan, number> {
  const limits = { ...TENANT_RPM_DEFAULTS };
  for (const pair of list(value)) {
    const [plan, limit, extra] = pair.split('=').map((p) => p.trim());
    const n = Number(limit);
    if (extra !== undefined || !isPlan(plan) || !Number.isSafeInteger(n) || n < 1) {
      throw new ConfigError(`invalid configuration: GATEWAY_TENANT_RATE_LIMIT_RPM has "${pair}"; expected plan=limit pairs (plans free, standard, premium; limits positive integers)`);
    }
    limits[plan] = n;
  }
  return limits;
}

export type AiGatewayConfig = ReturnType<typeof loadAiGatewayConfig>;
