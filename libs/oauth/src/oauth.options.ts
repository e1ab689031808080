/** Injection token of the resolved OAuthModule options. */
export const OAUTH_OPTIONS = Symbol('OAUTH_OPTIONS');

/** Only the ES256 algorithm is issued or accepted (CONTRACT.md section 3). */
export const ACCESS_TOKEN_ALG = 'ES256';
/** RFC 9068 `typ` of JWT access tokens: keeps them from being mistaken for ID tokens and back. */
export const ACCESS_TOKEN_TYP = 'at+jwt';

/**
 * Where the issuer reads its signing key: `SecretStore` from @flagship/config fits (environment or
 * AWS Secrets Manager, re-read periodically), as does any object with the same `get`.
 */
export interface SecretSource {
  get(name: string): string | undefined;
  /** When offered, a changed key is activated at once instead of at the next token. */
  onChange?(listener: (names: string[]) => void): () => unknown;
}

export interface OAuthIssuingOptions {
  /** Source of `secretName`; none (or an empty value) means a generated key kept in `signing_keys` (dev). */
  secrets?: SecretSource;
  /** Default `OAUTH_SIGNING_KEY`: an EC P-256 private key, PEM PKCS#8 or a private JWK (JSON). */
  secretName?: string;
  /** Refuse to start without a configured key (production: a generated key lives in the database). */
  requireConfiguredKey?: boolean;
  /** How often the active key's publication lease is renewed and the secret re-read (default 300 s). */
  keyRenewIntervalSeconds?: number;
}

export interface OAuthModuleOptions {
  /** `iss` of access tokens (management-api: OAUTH_ISSUER, default its public base URL). Required. */
  issuer: string;
  /** `aud` of access tokens (OAUTH_AUDIENCE). Default `flagship-api`. */
  audience?: string;
  /** `expires_in` (default 3600). */
  tokenTtlSeconds?: number;
  /** Leeway on `exp` and `nbf` between servers' clocks (default 30 s). */
  clockToleranceSeconds?: number;
  /** Present only in the app that issues tokens (management-api); the others only verify. */
  issuing?: OAuthIssuingOptions;
  /** An unknown `kid` reloads the keys from Postgres at most this often (default 5000 ms). */
  keyRefreshCooldownMs?: number;
  /** Published keys older than this are reloaded in the background at their next read, dropping retired ones (default 60000 ms). */
  keyRefreshIntervalMs?: number;
  /** The revocation set in Redis is read at least this often, healing missed pub/sub messages (default 1000 ms). */
  revocationPollMs?: number;
  /** `oauth_clients.deleted_at` is swept this often, healing a Redis that lost its data (default 60000 ms). */
  revocationDbSweepMs?: number;
}

export interface ResolvedOAuthOptions {
  issuer: string;
  audience: string;
  tokenTtlSeconds: number;
  clockToleranceSeconds: number;
  issuing:
    | (Required<Pick<OAuthIssuingOptions, 'secretName' | 'requireConfiguredKey' | 'keyRenewIntervalSeconds'>> & { secrets?: SecretSource })
    | undefined;
  keyRefreshCooldownMs: number;
  keyRefreshIntervalMs: number;
  revocationPollMs: number;
  revocationDbSweepMs: number;
  /**
   * How long a signing key stays published after its signer last renewed it: a token signed just
   * before the next renewal would have happened must still verify until it expires.
   */
  keyLeaseSeconds: number;
  /** How long a revocation is remembered: past it, every token issued before it has expired. */
  revocationRetentionMs: number;
}

export function resolveOAuthOptions(options: OAuthModuleOptions): ResolvedOAuthOptions {
  if (typeof options.issuer !== 'string' || options.issuer === '') throw new Error('OAuthModule: issuer is required');
  const tokenTtlSeconds = options.tokenTtlSeconds ?? 3600;
  const clockToleranceSeconds = options.clockToleranceSeconds ?? 30;
  const renew = options.issuing?.keyRenewIntervalSeconds ?? 300;
  return {
    issuer: options.issuer,
    audience: options.audience || 'flagship-api',
    tokenTtlSeconds,
    clockToleranceSeconds,
    issuing: options.issuing
      ? {
          secrets: options.issuing.secrets,
          secretName: options.issuing.secretName ?? 'OAUTH_SIGNING_KEY',
          requireConfiguredKey: options.issuing.requireConfiguredKey ?? false,
          keyRenewIntervalSeconds: renew,
        }
      : undefined,
    keyRefreshCooldownMs: options.keyRefreshCooldownMs ?? 5000,
    keyRefreshIntervalMs: options.keyRefreshIntervalMs ?? 60_000,
    revocationPollMs: options.revocationPollMs ?? 1000,
    revocationDbSweepMs: options.revocationDbSweepMs ?? 60_000,
    keyLeaseSeconds: tokenTtlSeconds + clockToleranceSeconds + 2 * renew + 60,
    revocationRetentionMs: (tokenTtlSeconds + clockToleranceSeconds + 60) * 1000,
  };
}
