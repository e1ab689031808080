import { RedisKeys } from '@flagship/redis';
import { rateLimitHeaders } from './rate-limit.service';
import { clientAddress, rateLimitSubject } from './rate-limit.subject';
import { resolveRequestPoliciesOptions } from './request-policies.options';

describe('rate-limit subjects', () => {
  const keys = new RedisKeys('ff:');
  const options = resolveRequestPoliciesOptions({ limits: { standard: 3500 }, ipLimitPerMinute: 30 });

  it('defaults to the contract limits, overridden per plan', () => {
    expect(resolveRequestPoliciesOptions().limits).toEqual({ free: 600, standard: 3000, premium: 12000 });
    expect(resolveRequestPoliciesOptions().ipLimitPerMinute).toBe(60);
    expect(options.limits).toEqual({ free: 600, standard: 3500, premium: 12000 });
  });

  it('refuses a limit that is not a positive integer at start-up', () => {
    expect(() => resolveRequestPoliciesOptions({ limits: { free: 0 } })).toThrow(/limits.free must be a positive integer/);
    expect(() => resolveRequestPoliciesOptions({ ipLimitPerMinute: 1.5 })).toThrow(/ipLimitPerMinute/);
  });

  it('charges the tenant by its plan; callers of one tenant share it', () => {
    const a = rateLimitSubject({ kind: 'user', callerId: 'user:1', tenantId: 't1', plan: 'standard' }, '10.0.0.1', undefined, options, keys);
    const b = rateLimitSubject({ kind: 'client', callerId: 'client:x', tenantId: 't1', plan: 'standard' }, '10.0.0.2', undefined, options, keys);
    expect(a).toEqual({ kind: 'tenant', id: 't1', key: 'ff:t:t1:rl:api', limit: 3500 });
    expect(b.key).toBe(a.key);
  });

  it('charges a tenant whose plan is unknown to the caller at the free limit, never the tenant at two limits', () => {
    expect(rateLimitSubject({ kind: 'client', callerId: 'client:x', tenantId: 't2' }, '10.0.0.1', undefined, options, keys)).toEqual({
      kind: 'caller',
      id: 'client:x',
      key: 'ff:rl:api:caller:client:x',
      limit: 600,
    });
  });

  it('falls back to the caller, then the client address, at the free limit', () => {
    expect(rateLimitSubject({ kind: 'user', callerId: 'user:9' }, '10.0.0.1', undefined, options, keys)).toEqual({
      kind: 'caller',
      id: 'user:9',
      key: 'ff:rl:api:caller:user:9',
      limit: 600,
    });
    expect(rateLimitSubject(undefined, '10.0.0.1', undefined, options, keys)).toEqual({ kind: 'ip', id: '10.0.0.1', key: 'ff:rl:api:ip:10.0.0.1', limit: 600 });
  });

  it('limits per-ip routes by address whoever calls, in a budget apart from the API one', () => {
    const caller = { kind: 'user' as const, callerId: 'user:1', tenantId: 't1', plan: 'premium' as const };
    expect(rateLimitSubject(caller, '10.0.0.1', { per: 'ip' }, options, keys)).toEqual({ kind: 'ip', id: '10.0.0.1', key: 'ff:rl:ip:ip:10.0.0.1', limit: 30 });
    expect(rateLimitSubject(undefined, '10.0.0.1', { per: 'ip', limit: 5, bucket: 'dev-idp' }, options, keys)).toMatchObject({ key: 'ff:rl:dev-idp:ip:10.0.0.1', limit: 5 });
  });

  it('takes the client address from Express, else the socket', () => {
    expect(clientAddress({ ip: '203.0.113.5', socket: { remoteAddress: '10.0.0.1' } })).toBe('203.0.113.5');
    expect(clientAddress({ socket: { remoteAddress: '10.0.0.1' } })).toBe('10.0.0.1');
    expect(clientAddress({})).toBe('unknown');
  });
});

describe('RateLimit headers', () => {
  it('gives the seconds until the window ends while allowed', () => {
    expect(rateLimitHeaders({ allowed: true, limit: 600, windowMs: 60_000, remaining: 599, resetMs: 12_001, retryAfterMs: 0 })).toEqual({
      'RateLimit-Limit': '600',
      'RateLimit-Remaining': '599',
      'RateLimit-Reset': '13',
    });
    expect(rateLimitHeaders({ allowed: true, limit: 600, windowMs: 60_000, remaining: 0, resetMs: 1, retryAfterMs: 0 })['RateLimit-Reset']).toBe('1');
  });

  it('gives Retry-After, equal to the reset, once refused', () => {
    expect(rateLimitHeaders({ allowed: false, limit: 600, windowMs: 60_000, remaining: 0, resetMs: 5_000, retryAfterMs: 20_500 })).toEqual({
      'RateLimit-Limit': '600',
      'RateLimit-Remaining': '0',
      'RateLimit-Reset': '21',
      'Retry-After': '21',
    });
  });
});
