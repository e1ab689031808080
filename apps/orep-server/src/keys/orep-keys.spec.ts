import { compileFlag, type FlagDefinition } from '@flagship/flag-evaluation';
import { KeyListError, MAX_KEYS_PER_LIST, OrepKeys, parseKeyList, readKeyLists, SERVER, visibleTo } from './orep-keys';

const SERVER_TOKEN = 'server-token-000000000001';
const BROWSER = 'pk_browser_0000000000001';
const BROWSER_NEXT = 'pk_browser_0000000000002';
const MOBILE = 'mob_key_0000000000000001';

const flag = (clientSideAvailability?: FlagDefinition['clientSideAvailability']) =>
  compileFlag({ key: 'f', type: 'boolean', defaultValue: false, variations: [], enabled: false, targets: [], rules: [], prerequisites: [], ...(clientSideAvailability ? { clientSideAvailability } : {}) });

describe('orep-server keys', () => {
  const keys = () => new OrepKeys(SERVER_TOKEN, { usingEnvironmentId: [BROWSER], usingMobileKey: [MOBILE] });
  const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

  it('tells the server token, a browser key and a mobile key apart; anything else is missing or invalid', () => {
    const k = keys();
    expect(k.identify(bearer(SERVER_TOKEN))).toBe(SERVER);
    expect(k.identify({ 'x-api-key': BROWSER })).toMatchObject({ kind: 'usingEnvironmentId' });
    expect(k.identify(bearer(MOBILE))).toMatchObject({ kind: 'usingMobileKey' });
    expect(k.identify({})).toBe('missing');
    expect(k.identify(bearer(`${BROWSER}x`))).toBe('invalid');
    expect(k.identify(bearer(BROWSER.slice(0, -1)))).toBe('invalid');
    // The id names the key without telling it, and is the same for the same key.
    const browser = k.identify(bearer(BROWSER));
    expect(typeof browser !== 'string' && browser.keyId).toMatch(/^[\w-]{16}$/);
    expect(k.callerOf((browser as { keyId: string }).keyId)).toBe(browser);
    expect(JSON.stringify(browser)).not.toContain(BROWSER);
  });

  it('a client-side key sees only the flags marked for its kind; the server token sees every flag', () => {
    const k = keys();
    const browser = k.identify(bearer(BROWSER)) as Exclude<ReturnType<OrepKeys['identify']>, string>;
    const mobile = k.identify(bearer(MOBILE)) as typeof browser;
    const serverOnly = flag();
    const forBrowsers = flag({ usingEnvironmentId: true, usingMobileKey: false });
    const forMobiles = flag({ usingEnvironmentId: false, usingMobileKey: true });
    expect([serverOnly, forBrowsers, forMobiles].map((f) => [visibleTo(f, SERVER), visibleTo(f, browser), visibleTo(f, mobile)])).toEqual([
      [true, false, false],
      [true, true, false],
      [true, false, true],
    ]);
  });

  it('a rotation puts the new lists in force, refuses the key that left and tells whose streams to end', () => {
    const k = keys();
    const old = k.identify(bearer(BROWSER)) as { keyId: string };
    const revoked: string[][] = [];
    k.onRevoked((ids) => revoked.push([...ids]));
    k.replace({ usingEnvironmentId: [BROWSER, BROWSER_NEXT], usingMobileKey: [MOBILE] });
    expect(revoked).toEqual([]);
    expect(k.identify(bearer(BROWSER_NEXT))).toMatchObject({ kind: 'usingEnvironmentId' });
    k.replace({ usingEnvironmentId: [BROWSER_NEXT], usingMobileKey: [] });
    expect(k.identify(bearer(BROWSER))).toBe('invalid');
    expect(k.identify(bearer(MOBILE))).toBe('invalid');
    expect(k.callerOf(old.keyId)).toBeUndefined();
    expect(revoked).toHaveLength(1);
    expect(revoked[0]).toHaveLength(2);
    expect(revoked[0]).toContain(old.keyId);
    expect(k.identify(bearer(SERVER_TOKEN))).toBe(SERVER);
    expect(k.counts()).toEqual({ usingEnvironmentId: 1, usingMobileKey: 0 });
  });

  it('a list that would hand browsers the server token, or give a key two kinds, is refused and the keys in force stay', () => {
    const k = keys();
    expect(() => k.replace({ usingEnvironmentId: [SERVER_TOKEN], usingMobileKey: [] })).toThrow(new KeyListError('OREP_CLIENT_KEYS: a key equals OREP_AUTH_TOKEN; client-side keys must differ from the server token'));
    expect(() => k.replace({ usingEnvironmentId: [BROWSER], usingMobileKey: [BROWSER] })).toThrow('OREP_MOBILE_KEYS: a key is also in OREP_CLIENT_KEYS');
    expect(k.identify(bearer(BROWSER))).toMatchObject({ kind: 'usingEnvironmentId' });
    expect(k.identify(bearer(MOBILE))).toMatchObject({ kind: 'usingMobileKey' });
  });

  it('reads lists separated by commas or whitespace, and refuses short or odd keys without quoting them', () => {
    expect(parseKeyList('')).toEqual([]);
    expect(parseKeyList(` ${BROWSER},${BROWSER_NEXT}\n${BROWSER} `)).toEqual([BROWSER, BROWSER_NEXT]);
    expect(() => parseKeyList('short-key')).toThrow('key 1 must be 16 to 256 printable ASCII characters, without commas or spaces');
    expect(() => parseKeyList(`${BROWSER} pk_brówser_000000000`)).toThrow(/^key 2 must/);
    expect(() => parseKeyList(Array.from({ length: MAX_KEYS_PER_LIST + 1 }, (_, i) => `${BROWSER}${i}`).join(','))).toThrow(`at most ${MAX_KEYS_PER_LIST} keys`);
    expect(() => readKeyLists((name) => (name === 'OREP_MOBILE_KEYS' ? 'x' : ''))).toThrow(new KeyListError('OREP_MOBILE_KEYS: key 1 must be 16 to 256 printable ASCII characters, without commas or spaces'));
  });
});
