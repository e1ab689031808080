import { inspect } from 'node:util';
import { credentialsFor, formEncode, parseTokenResponse } from './credentials';
import { FlagshipClient } from './flagship.client';

describe('formEncode', () => {
  it('form-urlencodes as RFC 6749 section 2.3.1 asks before Basic encoding', () => {
    expect(formEncode('a b:c/d+é')).toBe('a+b%3Ac%2Fd%2B%C3%A9');
    expect(formEncode("!'()*")).toBe('%21%27%28%29%2A');
  });
});

describe('parseTokenResponse', () => {
  it('reads a bearer token and its expiry', () => {
    expect(parseTokenResponse({ access_token: 'at', token_type: 'Bearer', expires_in: 3600, scope: 'flags:read' }, 1000)).toEqual({ value: 'at', expiresAtMs: 3_601_000 });
  });

  it('assumes a short lifetime when expires_in is missing', () => {
    expect(parseTokenResponse({ access_token: 'at', token_type: 'bearer' }, 0).expiresAtMs).toBe(300_000);
  });

  it('refuses an answer without a token, or of another token type, without echoing it', () => {
    expect(() => parseTokenResponse({ token_type: 'Bearer' }, 0)).toThrow('without an access_token');
    let message = '';
    try {
      parseTokenResponse({ access_token: 'very-secret-token', token_type: 'mac' }, 0);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain('"mac"');
    expect(message).not.toContain('very-secret-token');
  });
});

describe('credentialsFor', () => {
  it('refuses incomplete auth without naming the values given', () => {
    expect(() => credentialsFor({ clientId: 'id', clientSecret: '' }, 'http://h')).toThrow('auth.clientId and auth.clientSecret must be non-empty strings');
    expect(() => credentialsFor({ idToken: '' }, 'http://h')).toThrow('auth.idToken must be a non-empty string');
    expect(() => credentialsFor({ clientId: 'id', clientSecret: 's3cr3t', tokenUrl: 'nope' }, 'http://h')).toThrow(/^FlagshipClient: auth.tokenUrl is not a URL.$/);
  });
});

describe('FlagshipClient options', () => {
  it('refuses a bad baseUrl and bad numbers up front', () => {
    const auth = { idToken: 't' };
    expect(() => new FlagshipClient({ baseUrl: 'localhost:3000', auth })).toThrow('baseUrl must be an http(s) URL');
    expect(() => new FlagshipClient({ baseUrl: 'not a url', auth })).toThrow('is not a URL');
    expect(() => new FlagshipClient({ baseUrl: 'https://u:p@h', auth })).toThrow('must not carry credentials');
    expect(() => new FlagshipClient({ baseUrl: 'https://h', auth, maxRetries: -1 })).toThrow('maxRetries must be a non-negative integer');
    expect(() => new FlagshipClient({ baseUrl: 'https://h', auth, timeoutMs: 0 })).toThrow('timeoutMs must be a positive integer');
  });

  it('keeps secrets out of what printing the client shows', () => {
    const client = new FlagshipClient({ baseUrl: 'https://h', auth: { clientId: 'ffc_id', clientSecret: 'ffs_top_secret' } });
    const printed = inspect(client, { depth: 10, showHidden: true });
    expect(printed).toContain('FlagsResource');
    expect(printed).not.toContain('ffs_top_secret');
    const userClient = new FlagshipClient({ baseUrl: 'https://h', auth: { idToken: 'eyJ.user.token' } });
    expect(inspect(userClient, { depth: 10, showHidden: true })).not.toContain('eyJ.user.token');
  });
});
