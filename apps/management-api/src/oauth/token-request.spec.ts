import { OAuthTokenError } from './oauth-token.errors';
import { parseTokenRequest } from './token-request';

const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${encodeURIComponent(id).replace(/%20/g, '+')}:${encodeURIComponent(secret).replace(/%20/g, '+')}`).toString('base64')}`;

function refusal(body: unknown, auth?: string): OAuthTokenError {
  try {
    parseTokenRequest(body, auth);
  } catch (err) {
    if (err instanceof OAuthTokenError) return err;
    throw err;
  }
  throw new Error('accepted');
}

describe('parseTokenRequest', () => {
  const grant = { grant_type: 'client_credentials' };

  it('reads client_secret_post, ignoring unknown fields', () => {
    expect(parseTokenRequest({ ...grant, client_id: 'ffc_a', client_secret: 's', scope: 'flags:read  flags:read flags:write', extra: 'x' }, undefined)).toEqual({
      clientId: 'ffc_a',
      clientSecret: 's',
      authMethod: 'client_secret_post',
      scopes: ['flags:read', 'flags:write'],
    });
  });

  it('reads client_secret_basic, form-urlencode-decoding id and secret (RFC 6749 2.3.1)', () => {
    const secret = 'a:b+c d%é';
    expect(parseTokenRequest(grant, basic('ffc_a', secret))).toEqual({ clientId: 'ffc_a', clientSecret: secret, authMethod: 'client_secret_basic', scopes: undefined });
    expect(parseTokenRequest({ ...grant, client_id: 'ffc_a' }, basic('ffc_a', 's')).clientId).toBe('ffc_a');
  });

  it.each([
    ['no body at all', undefined, undefined, 'invalid_request', false],
    ['no grant_type', { client_id: 'a', client_secret: 's' }, undefined, 'invalid_request', false],
    ['another grant', { grant_type: 'password', client_id: 'a', client_secret: 's' }, undefined, 'unsupported_grant_type', false],
    ['a repeated field', { ...grant, client_id: ['a', 'b'], client_secret: 's' }, undefined, 'invalid_request', false],
    ['both methods', { ...grant, client_id: 'a', client_secret: 's' }, basic('a', 's'), 'invalid_request', false],
    ['Basic for another client than client_id', { ...grant, client_id: 'b' }, basic('a', 's'), 'invalid_request', false],
    ['a secret without client_id', { ...grant, client_secret: 's' }, undefined, 'invalid_request', false],
    ['no client authentication', grant, undefined, 'invalid_client', false],
    ['client_id without a secret', { ...grant, client_id: 'a' }, undefined, 'invalid_client', false],
    ['malformed Basic', grant, 'Basic !!!', 'invalid_client', true],
    ['Basic without a colon', grant, `Basic ${Buffer.from('nocolon').toString('base64')}`, 'invalid_client', true],
    ['Basic with bad percent-encoding', grant, `Basic ${Buffer.from('a:%zz').toString('base64')}`, 'invalid_client', true],
    ['a Bearer header', grant, 'Bearer abc', 'invalid_client', true],
    ['an oversized secret', { ...grant, client_id: 'a', client_secret: 'x'.repeat(300) }, undefined, 'invalid_client', false],
  ])('refuses %s', (_name, body, auth, error, challenge) => {
    const err = refusal(body, auth);
    expect(err.error).toBe(error);
    expect(err.basicChallenge).toBe(challenge);
    expect(err.status).toBe(error === 'invalid_client' ? 401 : 400);
  });

  it('takes an empty or blank scope as none asked', () => {
    expect(parseTokenRequest({ ...grant, client_id: 'a', client_secret: 's', scope: '' }, undefined).scopes).toBeUndefined();
    expect(parseTokenRequest({ ...grant, client_id: 'a', client_secret: 's', scope: '  ' }, undefined).scopes).toEqual([]);
  });
});
