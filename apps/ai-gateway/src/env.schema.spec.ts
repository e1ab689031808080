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
