import { DEFAULT_FLAG_MAX_BYTES, flagDefinitionBytes, utf8Length } from './size';
import type { FlagDefinition } from './types';

const flag = (extra: Partial<FlagDefinition> = {}): FlagDefinition => ({
  key: 'k',
  type: 'json',
  defaultValue: {},
  variations: [{ id: 'a', name: 'A', value: { label: 'x' }, weight: 0 }],
  enabled: true,
  targets: [],
  rules: [],
  prerequisites: [],
  ...extra,
});

describe('flagDefinitionBytes', () => {
  it('is the UTF-8 length of the definition as JSON', () => {
    const def = flag();
    expect(flagDefinitionBytes(def)).toBe(Buffer.byteLength(JSON.stringify(def), 'utf8'));
  });

  it('leaves the top-level version out (it grows with every write), but not a version inside a value', () => {
    expect(flagDefinitionBytes(flag({ version: 12_345_678 }))).toBe(flagDefinitionBytes(flag()));
    const hidden = flag({ variations: [{ id: 'a', name: 'A', value: { version: 'x'.repeat(1000) }, weight: 0 }] });
    expect(flagDefinitionBytes(hidden)).toBeGreaterThan(1000);
  });

  it('counts every byte of a JSON variation, whatever its characters', () => {
    const small = flagDefinitionBytes(flag());
    const big = flagDefinitionBytes(flag({ variations: [{ id: 'a', name: 'A', value: { label: 'x', blob: 'é'.repeat(20_000) }, weight: 0 }] }));
    // 'é' is two bytes in UTF-8; the key and quotes add the rest.
    expect(big - small).toBe(40_000 + '"blob":"",'.length);
    expect(big).toBeGreaterThan(DEFAULT_FLAG_MAX_BYTES);
  });

  it('ignores key order (jsonb and a file may order keys differently)', () => {
    const a = { key: 'k', enabled: true, variations: [{ b: 1, a: 'x' }] };
    const b = { variations: [{ a: 'x', b: 1 }], enabled: true, key: 'k' };
    expect(flagDefinitionBytes(a)).toBe(flagDefinitionBytes(b));
  });
});

describe('utf8Length', () => {
  it.each([
    ['', 0],
    ['abc', 3],
    ['é', 2],
    ['€', 3],
    ['😀', 4],
    ['\ud800', 3], // a lone surrogate: JSON.stringify escapes it, but if not, it encodes as U+FFFD
  ])('%j is %d bytes, as Buffer counts', (text, bytes) => {
    expect(utf8Length(text)).toBe(bytes);
    expect(utf8Length(text)).toBe(Buffer.byteLength(text, 'utf8'));
  });
});
