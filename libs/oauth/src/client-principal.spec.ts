import { clientCallerContext, principalFromClaims } from './client-principal';
import { InvalidTokenError } from './oauth.errors';

const claims = {
  iss: 'https://api.example',
  aud: 'flagship-api',
  sub: 'ffc_abc',
  client_id: 'ffc_abc',
  tenant_id: '00000000-0000-4000-8000-000000000001',
  scope: 'flags:read flags:evaluate',
  product_keys: ['core', 'insights'],
  jti: 'j1',
  iat: 1_700_000_000,
  exp: 1_700_003_600,
};

describe('principalFromClaims', () => {
  it('maps the claims', () => {
    expect(principalFromClaims(claims)).toEqual({
      clientId: 'ffc_abc',
      tenantId: claims.tenant_id,
      scopes: ['flags:read', 'flags:evaluate'],
      productKeys: ['core', 'insights'],
      jti: 'j1',
      issuedAt: 1_700_000_000,
      expiresAt: new Date(1_700_003_600_000),
    });
    expect(principalFromClaims({ ...claims, scope: '' }).scopes).toEqual([]);
  });

  it.each([
    ['sub', { sub: undefined }],
    ['client_id', { client_id: 'ffc_other' }],
    ['tenant_id', { tenant_id: 7 }],
    ['scope', { scope: ['flags:read'] }],
    ['product_keys', { product_keys: 'core' }],
    ['product_keys', { product_keys: [1] }],
    ['jti', { jti: '' }],
    ['iat', { iat: '1700000000' }],
    ['exp', { exp: undefined }],
  ])('refuses a bad %s claim', (claim, change) => {
    const run = () => principalFromClaims({ ...claims, ...change });
    expect(run).toThrow(InvalidTokenError);
    expect(run).toThrow(new RegExp(claim));
  });

  it('maps to the caller context every guard reads', () => {
    expect(clientCallerContext(principalFromClaims(claims))).toEqual({
      kind: 'client',
      callerId: 'client:ffc_abc',
      tenantId: claims.tenant_id,
      scopes: ['flags:read', 'flags:evaluate'],
    });
  });
});
