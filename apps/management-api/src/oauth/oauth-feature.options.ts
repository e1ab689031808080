import { type OAuthModuleOptions, SCRYPT_COST, type ScryptCost, type SecretSource } from '@flagship/oauth';

export const OAUTH_FEATURE_OPTIONS = Symbol('OAUTH_FEATURE_OPTIONS');

export interface OAuthFeatureOptions {
  /** OAuthModule's options; `issuing` must be set, this app signs the tokens. */
  oauth: OAuthModuleOptions;
  /** Where clients reach this API: the token endpoint and JWKS addresses in the metadata. */
  publicBaseUrl: string;
  /** The cost client secrets are hashed at (default SCRYPT_COST; lower only in tests, SECRET_HASH_SCRYPT_N). */
  secretHashCost?: ScryptCost;
  productKeys?: {
    /** The own product's key, anyone may allow it (default `core`). */
    own?: string;
    /** Internal suite keys, only platform admins may allow them (default insights, helpdesk, forms, studio). */
    internal?: string[];
    /** Legacy keys, never allowed (default partner_portal). */
    legacy?: string[];
  };
}

export interface ResolvedOAuthFeatureOptions {
  publicBaseUrl: string;
  issuer: string;
  ownProductKey: string;
  internalProductKeys: string[];
  legacyProductKeys: string[];
  secretHashCost: ScryptCost;
}

export function resolveOAuthFeatureOptions(options: OAuthFeatureOptions): ResolvedOAuthFeatureOptions {
  return {
    publicBaseUrl: options.publicBaseUrl.replace(/\/+$/, ''),
    issuer: options.oauth.issuer,
    ownProductKey: options.productKeys?.own ?? 'core',
    internalProductKeys: options.productKeys?.internal ?? ['insights', 'helpdesk', 'forms', 'studio'],
    legacyProductKeys: options.productKeys?.legacy ?? ['partner_portal'],
    secretHashCost: options.secretHashCost ?? SCRYPT_COST,
  };
}

/** The slice of management-api's configuration (env.schema.ts) this feature reads. */
export interface OAuthFeatureConfig {
  publicBaseUrl: string;
  oauthIssuer: string;
  OAUTH_AUDIENCE: string;
  PRODUCT_KEY_OWN: string;
  internalProductKeys: string[];
  legacyProductKeys: string[];
  secretHashCost: ScryptCost;
}

/** Options from management-api's config; `secrets` is where OAUTH_SIGNING_KEY is read (its SecretStore). */
export function oauthFeatureOptionsFromConfig(
  config: OAuthFeatureConfig,
  secrets: SecretSource | undefined,
  extra: { requireConfiguredKey?: boolean } = {},
): OAuthFeatureOptions {
  return {
    oauth: {
      issuer: config.oauthIssuer,
      audience: config.OAUTH_AUDIENCE,
      issuing: { secrets, requireConfiguredKey: extra.requireConfiguredKey ?? false },
    },
    publicBaseUrl: config.publicBaseUrl,
    secretHashCost: config.secretHashCost,
    productKeys: { own: config.PRODUCT_KEY_OWN, internal: config.internalProductKeys, legacy: config.legacyProductKeys },
  };
}
