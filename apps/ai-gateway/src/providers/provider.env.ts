import type { CleanedEnv } from 'envalid';
import { makeValidator, num } from '@flagship/config';
import type { ProviderKey } from './provider.types';

/**
 * The provider layer's settings, spread into the gateway's env schema. Base URLs are OpenAI's
 * `baseURL` shape (`https://api.openai.com/v1`): the layer appends `/chat/completions`, `/embeddings`
 * and `/models`. Keys are secrets, read per request from the SecretStore (`PROVIDER_INHOUSE_API_KEY`,
 * `PROVIDER_HOSTED_API_KEY`), so they are not here.
 */
/** '' (not configured) or an http(s) URL: a typo stops the app at start-up with the variable named. */
const baseUrl = makeValidator<string>((v) => {
  if (v === '') return '';
  const u = new URL(v);
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('must be an http or https URL');
  return v;
});

export const providerEnv = {
  PROVIDER_INHOUSE_URL: baseUrl({ default: '', desc: 'base URL of the in-house OpenAI-compatible endpoint, e.g. http://models.internal:8000/v1' }),
  PROVIDER_HOSTED_URL: baseUrl({ default: '', desc: "base URL of the hosted provider, OpenAI's shape, e.g. https://api.openai.com/v1" }),
  PROVIDER_CONNECT_TIMEOUT_MS: num({ default: 3000 }),
  PROVIDER_FIRST_BYTE_TIMEOUT_MS: num({ default: 60000, desc: 'until the answer headers; also the longest silence between streamed chunks' }),
  PROVIDER_TOTAL_TIMEOUT_MS: num({ default: 300000, desc: 'a whole request, retries and fallback included' }),
  PROVIDER_MAX_RETRIES: num({ default: 2 }),
  PROVIDER_BREAKER_FAILURES: num({ default: 5, desc: 'consecutive failures that open a provider circuit' }),
  PROVIDER_BREAKER_COOLDOWN_MS: num({ default: 10000 }),
  PROVIDER_MAX_CONNECTIONS: num({ default: 256, desc: 'kept-alive upstream connections per provider' }),
  PROVIDER_ABANDONED_READ_MS: num({
    default: 60000,
    desc: 'after a client hangs up on a request already sent, its answer is still read (for its usage, which the tenant pays) this long at most',
  }),
  PROVIDER_ABANDONED_READ_BYTES: num({ default: 8 * 1024 * 1024, desc: 'and this many bytes of a stream at most; then the tokens read are billed, estimated' }),
};

export type ProviderEnv = CleanedEnv<typeof providerEnv>;

/** Where the layer reads keys: the app's SecretStore (env or AWS Secrets Manager) fits. */
export interface SecretSource {
  get(name: string): string | undefined;
}

export interface ProviderLayerOptions {
  upstreams: Record<ProviderKey, { url: string | undefined; apiKeySecret: string }>;
  secrets: SecretSource;
  connectTimeoutMs: number;
  firstByteTimeoutMs: number;
  totalTimeoutMs: number;
  maxRetries: number;
  breakerFailures: number;
  breakerCooldownMs: number;
  maxConnections: number;
  /** After the client left a sent request: how long (ms) and how many stream bytes its answer is still read. */
  abandonedReadMs?: number;
  abandonedReadBytes?: number;
  /** First retry waits about this long (jittered, doubling). */
  retryBaseMs?: number;
  /** How often the upstreams' model lists are re-read for /v1/models. */
  modelsRefreshMs?: number;
  onError?: (message: string, err: unknown) => void;
}

export function providerOptionsFromEnv(config: ProviderEnv, secrets: SecretSource): ProviderLayerOptions {
  return {
    upstreams: {
      inhouse: { url: config.PROVIDER_INHOUSE_URL || undefined, apiKeySecret: 'PROVIDER_INHOUSE_API_KEY' },
      hosted: { url: config.PROVIDER_HOSTED_URL || undefined, apiKeySecret: 'PROVIDER_HOSTED_API_KEY' },
    },
    secrets,
    connectTimeoutMs: config.PROVIDER_CONNECT_TIMEOUT_MS,
    firstByteTimeoutMs: config.PROVIDER_FIRST_BYTE_TIMEOUT_MS,
    totalTimeoutMs: config.PROVIDER_TOTAL_TIMEOUT_MS,
    maxRetries: config.PROVIDER_MAX_RETRIES,
    breakerFailures: config.PROVIDER_BREAKER_FAILURES,
    breakerCooldownMs: config.PROVIDER_BREAKER_COOLDOWN_MS,
    maxConnections: config.PROVIDER_MAX_CONNECTIONS,
    abandonedReadMs: config.PROVIDER_ABANDONED_READ_MS,
    abandonedReadBytes: config.PROVIDER_ABANDONED_READ_BYTES,
  };
}
