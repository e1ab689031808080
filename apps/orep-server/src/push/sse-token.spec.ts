import { SseTokens } from './sse-token';

describe('SseTokens (the SSE URL token)', () => {
  const now = Date.parse('2026-11-25T12:00:07Z');
  const tokens = new SseTokens('secret', 'postgres:t:production', 900);
  const browserKey = 'AbCdEfGhIjKl_-01';

  it('verifies what it minted until the expiry, which lies between ttl and ttl + ttl/4 ahead', () => {
    const token = tokens.mint('server', now);
    const exp = Number(token.split('.')[0]);
    expect(exp * 1000 - now).toBeGreaterThanOrEqual(900_000);
    expect(exp * 1000 - now).toBeLessThanOrEqual(1_125_000);
    expect(tokens.verify(token, now)).toEqual({ keyId: 'server', exp });
    expect(tokens.verify(token, exp * 1000 - 1)).toEqual({ keyId: 'server', exp });
    expect(tokens.verify(token, exp * 1000)).toBeUndefined();
  });

  it("names the key whose request minted it: the server token's in the earlier form, a client-side key's by its id", () => {
    const server = tokens.mint('server', now);
    const client = tokens.mint(browserKey, now);
    expect(server).toMatch(/^\d+\.[\w-]{43}$/);
    expect(client).toMatch(new RegExp(`^\\d+\\.${browserKey}\\.[\\w-]{43}$`));
    expect(tokens.verify(client, now)).toEqual({ keyId: browserKey, exp: Number(client.split('.')[0]) });
    // The id is covered by the MAC: a token cannot be moved to another key, nor to the server's.
    const [exp, , mac] = client.split('.') as [string, string, string];
    expect(tokens.verify(`${exp}.${'Z'.repeat(16)}.${mac}`, now)).toBeUndefined();
    expect(tokens.verify(`${exp}.${mac}`, now)).toBeUndefined();
    const [, serverMac] = server.split('.') as [string, string];
    expect(tokens.verify(`${exp}.${browserKey}.${serverMac}`, now)).toBeUndefined();
  });

  it('hands out one URL per step and key, so providers keep their connection across refetches', () => {
    expect(tokens.mint('server', now)).toBe(tokens.mint('server', now + 1000));
    expect(tokens.mint('server', now)).not.toBe(tokens.mint('server', now + 225_000));
    expect(tokens.mint(browserKey, now)).toBe(tokens.mint(browserKey, now + 1000));
  });

  it('refuses another scope, another secret, a changed expiry or MAC, one too far ahead, and junk', () => {
    const token = tokens.mint('server', now);
    const [exp, mac] = token.split('.') as [string, string];
    expect(new SseTokens('secret', 'postgres:t:staging', 900).verify(token, now)).toBeUndefined();
    expect(new SseTokens('other', 'postgres:t:production', 900).verify(token, now)).toBeUndefined();
    expect(tokens.verify(`${Number(exp) - 1}.${mac}`, now)).toBeUndefined();
    expect(tokens.verify(`${exp}.${mac.slice(0, -1)}${mac.endsWith('A') ? 'B' : 'A'}`, now)).toBeUndefined();
    const far = new SseTokens('secret', 'postgres:t:production', 90_000).mint('server', now);
    expect(tokens.verify(far, now)).toBeUndefined();
    const junk = [undefined, null, '', '.', '..', 'abc', `${exp}`, `${exp}.`, `x${exp}.${mac}`, `${exp}.${mac}`.repeat(3), `${exp}.short.${mac}`, `${exp}.${browserKey}.${mac}.x`];
    for (const j of junk) expect(tokens.verify(j, now)).toBeUndefined();
  });
});
