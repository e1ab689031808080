import { SseTokens } from './sse-token';

describe('SseTokens (the SSE URL token)', () => {
  const now = Date.parse('2026-11-25T12:00:07Z');
  const tokens = new SseTokens('secret', 'postgres:t:production', 900);

  it('verifies what it minted until the expiry, which lies between ttl and ttl + ttl/4 ahead', () => {
    const token = tokens.mint(now);
    const exp = Number(token.split('.')[0]);
    expect(exp * 1000 - now).toBeGreaterThanOrEqual(900_000);
    expect(exp * 1000 - now).toBeLessThanOrEqual(1_125_000);
    expect(tokens.verify(token, now)).toBe(true);
    expect(tokens.verify(token, exp * 1000 - 1)).toBe(true);
    expect(tokens.verify(token, exp * 1000)).toBe(false);
  });

  it('hands out one URL per step, so providers keep their connection across refetches', () => {
    expect(tokens.mint(now)).toBe(tokens.mint(now + 1000));
    expect(tokens.mint(now)).not.toBe(tokens.mint(now + 225_000));
  });

  it('refuses another scope, another secret, a changed expiry or MAC, one too far ahead, and junk', () => {
    const token = tokens.mint(now);
    const [exp, mac] = token.split('.') as [string, string];
    expect(new SseTokens('secret', 'postgres:t:staging', 900).verify(token, now)).toBe(false);
    expect(new SseTokens('other', 'postgres:t:production', 900).verify(token, now)).toBe(false);
    expect(tokens.verify(`${Number(exp) - 1}.${mac}`, now)).toBe(false);
    expect(tokens.verify(`${exp}.${mac.slice(0, -1)}${mac.endsWith('A') ? 'B' : 'A'}`, now)).toBe(false);
    const far = new SseTokens('secret', 'postgres:t:production', 90_000).mint(now);
    expect(tokens.verify(far, now)).toBe(false);
    for (const junk of [undefined, null, '', '.', 'abc', `${exp}`, `${exp}.`, `x${exp}.${mac}`, `${exp}.${mac}`.repeat(3)]) expect(tokens.verify(junk, now)).toBe(false);
  });
});
