import type { Credentials, HttpTransport } from './http-transport';
import { FlagshipError } from './sdk.errors';
import type { Scope } from './sdk.types';
import { type CachedToken, TokenCache } from './token-cache';

/** A user's ID token from the identity provider: a string, or a function returning a current one. */
export interface IdTokenAuth {
  idToken: string | (() => Promise<string>);
}

/** An OAuth client of the tenant (machine calls): the client-credentials grant. */
export interface ClientCredentialsAuth {
  clientId: string;
  clientSecret: string;
  /** Scopes to ask for; all of the client's when left out (a token for the AI gateway needs `ai:invoke`). */
  scopes?: Scope[];
  /** Default `{baseUrl}/oauth/token`. */
  tokenUrl?: string;
}

export type AuthOptions = IdTokenAuth | ClientCredentialsAuth;

/** A fixed ID token: nothing to renew, a 401 is final. */
class StaticToken implements Credentials {
  readonly #token: string;

  constructor(token: string) {
    this.#token = token;
  }

  async token(): Promise<string> {
    return this.#token;
  }

  async renew(): Promise<string | undefined> {
    return undefined;
  }
}

/**
 * The caller's token source (say Firebase's `user.getIdToken()`), asked before every request: it
 * caches and refreshes the token itself. After a 401 it is asked once more, in case it now has a
 * newer one.
 */
class TokenFunction implements Credentials {
  readonly #source: () => Promise<string>;

  constructor(source: () => Promise<string>) {
    this.#source = source;
  }

  token(): Promise<string> {
    return this.#source();
  }

  async renew(used: string): Promise<string | undefined> {
    const next = await this.#source();
    return next !== used ? next : undefined;
  }
}

/**
 * Client credentials (RFC 6749 section 4.4) with client_secret_basic. The secret lives in a private
 * field, so printing the client (console.log, util.inspect) does not show it.
 */
class ClientCredentials implements Credentials {
  readonly #cache: TokenCache;

  constructor(transport: HttpTransport, auth: ClientCredentialsAuth, tokenUrl: string) {
    const basic = btoa(`${formEncode(auth.clientId)}:${formEncode(auth.clientSecret)}`);
    const form = new URLSearchParams({ grant_type: 'client_credentials' });
    if (auth.scopes?.length) form.set('scope', auth.scopes.join(' '));
    const body = form.toString();
    this.#cache = new TokenCache(async () => parseTokenResponse(await transport.tokenRequest(tokenUrl, body, basic), Date.now()));
  }

  token(): Promise<string> {
    return this.#cache.get();
  }

  async renew(used: string): Promise<string | undefined> {
    this.#cache.invalidate(used);
    const next = await this.#cache.get();
    return next !== used ? next : undefined;
  }
}

/**
 * RFC 6749 section 2.3.1: the id and secret are form-urlencoded before Basic encoding, so a secret
 * holding `:` or non-ASCII characters survives.
 */
export function formEncode(value: string): string {
  return encodeURIComponent(value)
    .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
    .replace(/%20/g, '+');
}

/** A lifetime to assume when the endpoint states none (RFC 6749 makes expires_in only RECOMMENDED). */
const ASSUMED_LIFETIME_S = 300;

/** Checks the RFC 6749 section 5.1 answer; the token itself never appears in an error. */
export function parseTokenResponse(body: unknown, nowMs: number): CachedToken {
  const b = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  if (typeof b['access_token'] !== 'string' || b['access_token'] === '') {
    throw new FlagshipError('The token endpoint answered without an access_token.');
  }
  if (typeof b['token_type'] !== 'string' || b['token_type'].toLowerCase() !== 'bearer') {
    throw new FlagshipError(`The token endpoint issued a token of type ${JSON.stringify(b['token_type'])}; only Bearer tokens are supported.`);
  }
  const expiresIn = typeof b['expires_in'] === 'number' && Number.isFinite(b['expires_in']) && b['expires_in'] > 0 ? b['expires_in'] : ASSUMED_LIFETIME_S;
  return { value: b['access_token'], expiresAtMs: nowMs + expiresIn * 1000 };
}

export function isClientCredentials(auth: AuthOptions): auth is ClientCredentialsAuth {
  return 'clientId' in auth;
}

/** The credentials an AuthOptions describes; throws a TypeError naming what is missing (never a value). */
export function credentialsFor(auth: AuthOptions, baseUrl: string): (transport: HttpTransport) => Credentials {
  if (typeof auth !== 'object' || auth === null) throw new TypeError('FlagshipClient: auth is required: { idToken } or { clientId, clientSecret }.');
  if (isClientCredentials(auth)) {
    if (typeof auth.clientId !== 'string' || auth.clientId === '' || typeof auth.clientSecret !== 'string' || auth.clientSecret === '') {
      throw new TypeError('FlagshipClient: auth.clientId and auth.clientSecret must be non-empty strings.');
    }
    const tokenUrl = auth.tokenUrl ?? `${baseUrl}/oauth/token`;
    try {
      new URL(tokenUrl);
    } catch {
      throw new TypeError('FlagshipClient: auth.tokenUrl is not a URL.');
    }
    return (transport) => new ClientCredentials(transport, auth, tokenUrl);
  }
  const { idToken } = auth;
  if (typeof idToken === 'function') return () => new TokenFunction(idToken);
  if (typeof idToken === 'string' && idToken !== '') return () => new StaticToken(idToken);
  throw new TypeError('FlagshipClient: auth.idToken must be a non-empty string or a function returning one.');
}
