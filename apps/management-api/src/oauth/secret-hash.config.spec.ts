import { SCRYPT_COST } from '@flagship/oauth';
import { loadManagementApiConfig } from '../env.schema';

describe('SECRET_HASH_SCRYPT_N', () => {
  it('defaults to the production cost in every mode', () => {
    for (const NODE_ENV of ['development', 'test']) {
      expect(loadManagementApiConfig({ NODE_ENV, IDP_MODE: 'dev' }).secretHashCost).toEqual(SCRYPT_COST);
    }
    expect(SCRYPT_COST).toEqual({ N: 16384, r: 8, p: 1 });
  });

  it('may be lowered for tests, never in production', () => {
    expect(loadManagementApiConfig({ NODE_ENV: 'test', IDP_MODE: 'dev', SECRET_HASH_SCRYPT_N: '1024' }).secretHashCost).toEqual({ N: 1024, r: 8, p: 1 });
    expect(() => loadManagementApiConfig({ NODE_ENV: 'production', IDP_MODE: 'oidc', IDP_ISSUER: 'https://idp.test', IDP_JWKS_URI: 'https://idp.test/jwks', SECRET_HASH_SCRYPT_N: '8192' })).toThrow(
      'invalid configuration: SECRET_HASH_SCRYPT_N below 16384 is refused when NODE_ENV=production',
    );
    expect(loadManagementApiConfig({ NODE_ENV: 'production', IDP_MODE: 'oidc', IDP_ISSUER: 'https://idp.test', IDP_JWKS_URI: 'https://idp.test/jwks' }).secretHashCost.N).toBe(16384);
    // Raising it is anyone's choice.
    expect(loadManagementApiConfig({ NODE_ENV: 'development', IDP_MODE: 'dev', SECRET_HASH_SCRYPT_N: '65536' }).secretHashCost.N).toBe(65536);
  });

  it('must be a power of two scrypt accepts', () => {
    for (const value of ['1000', '512', '0', '2097152', '1024.5']) {
      expect(() => loadManagementApiConfig({ NODE_ENV: 'test', IDP_MODE: 'dev', SECRET_HASH_SCRYPT_N: value })).toThrow(
        'invalid configuration: SECRET_HASH_SCRYPT_N must be a power of two from 1024 to 1048576',
      );
    }
  });
});
