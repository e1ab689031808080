import { OAuthTokenError } from './oauth-token.errors';

export type ClientAuthMethod = 'client_secret_basic' | 'client_secret_post';

/** A token request whose form and client authentication are well formed (not yet checked against a client). */
export interface TokenRequest {
  clientId: string;
  clientSecret: string;
  authMethod: ClientAuthMethod;
  /** The requested scopes, or undefined for "all of the client's". */
  scopes: string[] | undefined;
}

/** Longer than any id or secret we issue: refused without touching the database. */
const MAX_CREDENTIAL_LENGTH = 256;
const MAX_SCOPE_LENGTH = 1024;

/** RFC 6749 appendix B: application/x-www-form-urlencoded decoding, `+` being a space. */
function formDecode(value: string): string {
  return decodeURIComponent(value.replace(/\+/g, ' '));
}

/** RFC 6749 section 2.3.1: `Basic base64(urlencode(client_id):urlencode(client_secret))`. */
function parseBasic(header: string): { clientId: string; clientSecret: string } {
  const invalid = () => new OAuthTokenError('invalid_client', 'The Basic credentials are malformed.', true);
  const match = /^Basic +([A-Za-z0-9+/]+={0,2}) *$/i.exec(header);
  if (!match) throw invalid();
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw invalid();
  try {
    return { clientId: formDecode(decoded.slice(0, colon)), clientSecret: formDecode(decoded.slice(colon + 1)) };
  } catch {
    throw invalid();
  }
}

/**
 * Reads a `POST /oauth/token` request: the form body as body-parser left it (strings, or arrays for a
 * repeated field) and the Authorization header. Unknown fields are ignored (RFC 6749 section 3.2).
 * Checks, in order: repeated fields and grant_type (no client lookup is wasted on those), then exactly
 * one client authentication method.
 */
export function parseTokenRequest(body: unknown, authorization: string | undefined): TokenRequest {
  const form: Record<string, unknown> = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
  const field = (name: string): string | undefined => {
    const v = form[name];
    if (Array.isArray(v)) throw new OAuthTokenError('invalid_request', `The parameter ${name} is repeated.`);
    return typeof v === 'string' && v !== '' ? v : undefined;
  };

  const grantType = field('grant_type');
  const postedId = field('client_id');
  const postedSecret = field('client_secret');
  const scope = field('scope');
  if (grantType === undefined) throw new OAuthTokenError('invalid_request', 'The grant_type parameter is required.');
  if (grantType !== 'client_credentials') throw new OAuthTokenError('unsupported_grant_type', 'Only the client_credentials grant is supported.');
  if (scope !== undefined && scope.length > MAX_SCOPE_LENGTH) throw new OAuthTokenError('invalid_scope', 'The scope parameter is too long.');

  let clientId: string;
  let clientSecret: string;
  let authMethod: ClientAuthMethod;
  if (authorization !== undefined && authorization !== '') {
    if (!/^Basic /i.test(authorization)) {
      throw new OAuthTokenError('invalid_client', 'Authenticate the client with HTTP Basic or client_secret in the form.', true);
    }
    if (postedSecret !== undefined) {
      throw new OAuthTokenError('invalid_request', 'Use one client authentication method: HTTP Basic or client_secret in the form, not both.');
    }
    ({ clientId, clientSecret } = parseBasic(authorization));
    // A client_id in the form next to Basic is tolerated when it names the same client.
    if (postedId !== undefined && postedId !== clientId) {
      throw new OAuthTokenError('invalid_request', 'The client_id parameter does not match the Basic credentials.');
    }
    authMethod = 'client_secret_basic';
  } else {
    if (postedId === undefined && postedSecret !== undefined) throw new OAuthTokenError('invalid_request', 'The client_id parameter is required.');
    if (postedId === undefined || postedSecret === undefined) {
      throw new OAuthTokenError('invalid_client', 'Client authentication is required: HTTP Basic or client_id and client_secret in the form.');
    }
    clientId = postedId;
    clientSecret = postedSecret;
    authMethod = 'client_secret_post';
  }
  if (clientId === '' || clientSecret === '' || clientId.length > MAX_CREDENTIAL_LENGTH || clientSecret.length > MAX_CREDENTIAL_LENGTH) {
    throw new OAuthTokenError('invalid_client', 'Client authentication failed.', authMethod === 'client_secret_basic');
  }
  return {
    clientId,
    clientSecret,
    authMethod,
    scopes: scope === undefined ? undefined : [...new Set(scope.split(' ').filter((s) => s !== ''))],
  };
}
