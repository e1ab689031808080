import type { CallerContext } from '@flagship/service-kit';
import { InvalidTokenError } from './oauth.errors';

/** The OAuth client a verified access token speaks for. */
export interface ClientPrincipal {
  clientId: string;
  tenantId: string;
  scopes: string[];
  productKeys: string[];
  jti: string;
  /** `iat`, in seconds: revocations refuse tokens issued before them. */
  issuedAt: number;
  expiresAt: Date;
}

/** The claims the issuer writes (CONTRACT.md section 3). */
export interface AccessTokenClaims {
  iss: string;
  aud: string;
  sub: string;
  client_id: string;
  tenant_id: string;
  scope: string;
  product_keys: string[];
  jti: string;
  iat: number;
  exp: number;
}

const isString = (v: unknown): v is string => typeof v === 'string' && v.length > 0 && v.length <= 256;
const isNumericDate = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0;

/**
 * The principal of a token whose signature, issuer, audience and lifetime were already checked.
 * AccessTokenVerifier ends here: what a token must hold, whichever route or app verifies it.
 */
export function principalFromClaims(payload: unknown): ClientPrincipal {
  const bad = (what: string) => new InvalidTokenError('claims', `The access token's ${what} claim is missing or invalid.`);
  if (typeof payload !== 'object' || payload === null) throw new InvalidTokenError('malformed', 'The access token has no claims.');
  const c = payload as Record<string, unknown>;
  if (!isString(c['sub'])) throw bad('sub');
  if (c['client_id'] !== c['sub']) throw bad('client_id');
  if (!isString(c['tenant_id'])) throw bad('tenant_id');
  if (typeof c['scope'] !== 'string') throw bad('scope');
  const productKeys = c['product_keys'];
  if (!Array.isArray(productKeys) || !productKeys.every(isString)) throw bad('product_keys');
  if (!isString(c['jti'])) throw bad('jti');
  if (!isNumericDate(c['iat'])) throw bad('iat');
  // A token without `exp` must not live forever, whatever the JWT library makes optional.
  if (!isNumericDate(c['exp'])) throw bad('exp');
  return {
    clientId: c['sub'],
    tenantId: c['tenant_id'],
    scopes: c['scope'].split(' ').filter((s) => s !== ''),
    productKeys: [...(productKeys as string[])],
    jti: c['jti'],
    issuedAt: c['iat'],
    expiresAt: new Date(c['exp'] * 1000),
  };
}

/** What later guards (rate limits, idempotency, roles, scopes) read about a client caller. */
export function clientCallerContext(principal: ClientPrincipal): CallerContext {
  return { kind: 'client', callerId: `client:${principal.clientId}`, tenantId: principal.tenantId, scopes: [...principal.scopes] };
}
