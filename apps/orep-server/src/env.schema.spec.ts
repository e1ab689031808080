import { ConfigError } from '@flagship/config';
import { loadOrepServerConfig } from './env.schema';

const base = { OREP_AUTH_TOKEN: 'token' };

describe('orep-server configuration', () => {
  it('chooses the source: a file, else the tenant in Postgres, else the built-in example', () => {
    expect(loadOrepServerConfig({ ...base, OREP_FLAGS_FILE: 'flags.json' }).sourceMode).toBe('file');
    expect(loadOrepServerConfig({ ...base, OREP_TENANT_ID: '00000000-0000-4000-8000-00000000D3E0' })).toMatchObject({
      sourceMode: 'postgres',
      OREP_TENANT_ID: '00000000-0000-4000-8000-00000000d3e0',
      OREP_ENVIRONMENT: 'production',
      OREP_RECONCILE_S: 30,
      OREP_RATE_LIMIT_RPS: 0,
    });
    expect(loadOrepServerConfig(base).sourceMode).toBe('embedded');
  });

  it('refuses the built-in example flags in production', () => {
    expect(() => loadOrepServerConfig({ ...base, NODE_ENV: 'production' })).toThrow(
      new ConfigError('invalid configuration: OREP_TENANT_ID or OREP_FLAGS_FILE is required when NODE_ENV=production'),
    );
    expect(loadOrepServerConfig({ ...base, NODE_ENV: 'production', OREP_FLAGS_FILE: 'f.json' }).sourceMode).toBe('file');
  });

  it.each([
    [{}, 'OREP_AUTH_TOKEN is required'],
    [{ ...base, OREP_AUTH_TOKEN: '  ' }, 'OREP_AUTH_TOKEN is invalid'],
    [{ ...base, OREP_TENANT_ID: 'acme' }, 'OREP_TENANT_ID is invalid'],
    [{ ...base, OREP_RECONCILE_S: '0' }, 'OREP_RECONCILE_S is invalid'],
    [{ ...base, OREP_RECONCILE_S: 'often' }, 'OREP_RECONCILE_S is invalid'],
    [{ ...base, OREP_RATE_LIMIT_RPS: '-1' }, 'OREP_RATE_LIMIT_RPS is invalid'],
    [{ ...base, OREP_PORT: 'abc' }, 'OREP_PORT is invalid'],
    [{ ...base, OREP_SSE_MAX_CONNECTIONS: '-1' }, 'OREP_SSE_MAX_CONNECTIONS is invalid'],
    [{ ...base, OREP_SSE_MAX_BUFFER_BYTES: '0' }, 'OREP_SSE_MAX_BUFFER_BYTES is invalid'],
    [{ ...base, OREP_SSE_TOKEN_TTL_S: '1.5' }, 'OREP_SSE_TOKEN_TTL_S is invalid'],
    [{ ...base, OREP_PUBLIC_URL: 'flags.example.com' }, 'OREP_PUBLIC_URL is invalid'],
    [{ ...base, OREP_PUBLIC_URL: 'https://flags.example.com/?a=1' }, 'OREP_PUBLIC_URL is invalid'],
    [{ ...base, OREP_PUBLIC_URL: 'ftp://flags.example.com' }, 'OREP_PUBLIC_URL is invalid'],
    [{ ...base, OREP_FLAG_MAX_BYTES: '0' }, 'OREP_FLAG_MAX_BYTES is invalid'],
    [{ ...base, OREP_FLAG_MAX_BYTES: '2048', OREP_FLAG_SET_MAX_BYTES: '1024' }, 'OREP_FLAG_MAX_BYTES (2048) must not be more than OREP_FLAG_SET_MAX_BYTES (1024)'],
  ])('refuses %j with one line naming the variable', (env, message) => {
    expect(() => loadOrepServerConfig(env)).toThrow(ConfigError);
    expect(() => loadOrepServerConfig(env)).toThrow(message);
  });

  it('OFREP push: on by default, bounded, with a public URL taken without its trailing slash', () => {
    expect(loadOrepServerConfig(base)).toMatchObject({
      OREP_SSE_MAX_CONNECTIONS: 10000,
      OREP_SSE_MAX_PER_ADDRESS: 1000,
      OREP_SSE_MAX_BUFFER_BYTES: 65536,
      OREP_SSE_HEARTBEAT_S: 15,
      OREP_SSE_TOKEN_TTL_S: 900,
      OREP_SSE_INACTIVITY_DELAY_S: 120,
      OREP_PUBLIC_URL: '',
    });
    expect(loadOrepServerConfig({ ...base, OREP_PUBLIC_URL: 'https://app.example.com/flags/' }).OREP_PUBLIC_URL).toBe('https://app.example.com/flags');
  });

  it('takes fractions of a second for the reconcile interval', () => {
    expect(loadOrepServerConfig({ ...base, OREP_RECONCILE_S: '0.5' }).OREP_RECONCILE_S).toBe(0.5);
  });

  it('bounds flags in bytes by default: 32 KiB a flag (as management-api), 64 MiB all of them', () => {
    expect(loadOrepServerConfig(base)).toMatchObject({ OREP_FLAG_MAX_BYTES: 32768, OREP_FLAG_SET_MAX_BYTES: 67108864 });
  });
});
