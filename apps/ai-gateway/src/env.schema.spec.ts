import { loadAiGatewayConfig } from './env.schema';

const env = { NODE_ENV: 'test', DATABASE_URL: 'postgres://u@h/db', REDIS_URL: 'redis://h:6379' };

describe('GATEWAY_TENANT_RATE_LIMIT_RPM', () => {
  it('plan=limit pairs over the defaults', () => {
    expect(loadAiGatewayConfig(env).tenantRateLimits).toEqual({ free: 600, standard: 6000, premium: 60000 });
    expect(loadAiGatewayConfig({ ...env, GATEWAY_TENANT_RATE_LIMIT_RPM: ' free = 5 ,premium=7' }).tenantRateLimits).toEqual({ free: 5, standard: 6000, premium: 7 });
  });

  it.each(['gold=5', 'free=0', 'free=1.5', 'free', 'free=5=6', 'standard=lots'])('refuses %j at start-up, naming the variable', (value) => {
    expect(() => loadAiGatewayConfig({ ...env, GATEWAY_TENANT_RATE_LIMIT_RPM: value })).toThrow(/GATEWAY_TENANT_RATE_LIMIT_RPM/);
  });
});

describe('the image settings', () => {
  it('fetch for inhouse by default; a list of provider keys; anything else stops the app naming the variable', () => {
    expect(loadAiGatewayConfig(env)).toMatchObject({ mediaFetchProviders: ['inhouse'], mediaPolicy: { maxBytes: 5 * 1024 * 1024, allowLoopback: false } });
    expect(loadAiGatewayConfig({ ...env, GATEWAY_MEDIA_FETCH_PROVIDERS: 'inhouse, hosted' }).mediaFetchProviders).toEqual(['inhouse', 'hosted']);
    expect(loadAiGatewayConfig({ ...env, GATEWAY_MEDIA_FETCH_PROVIDERS: '' }).mediaFetchProviders).toEqual([]);
    expect(() => loadAiGatewayConfig({ ...env, GATEWAY_MEDIA_FETCH_PROVIDERS: 'inhouse,vllm' })).toThrow(/GATEWAY_MEDIA_FETCH_PROVIDERS has "vllm"/);
  });

  it('refuses GATEWAY_MEDIA_ALLOW_LOOPBACK in production', () => {
    expect(loadAiGatewayConfig({ ...env, GATEWAY_MEDIA_ALLOW_LOOPBACK: 'true' }).mediaPolicy.allowLoopback).toBe(true);
    expect(() => loadAiGatewayConfig({ ...env, NODE_ENV: 'production', OAUTH_ISSUER: 'https://api.example.com', GATEWAY_MEDIA_ALLOW_LOOPBACK: 'true' })).toThrow(
      'invalid configuration: GATEWAY_MEDIA_ALLOW_LOOPBACK=true is refused when NODE_ENV=production',
    );
  });
});
