import { exceedsJsonDepth, MAX_JSON_DEPTH } from './json-depth';

const nested = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;

describe('exceedsJsonDepth', () => {
  it('allows 64 levels and refuses 65, arrays and objects alike', () => {
    expect(MAX_JSON_DEPTH).toBe(64);
    expect(exceedsJsonDepth(nested(64))).toBe(false);
    expect(exceedsJsonDepth(nested(65))).toBe(true);
    expect(exceedsJsonDepth(`${'{"a":'.repeat(64)}1${'}'.repeat(64)}`)).toBe(false);
    expect(exceedsJsonDepth(`${'{"a":'.repeat(65)}1${'}'.repeat(65)}`)).toBe(true);
    expect(exceedsJsonDepth(`{"x": ${nested(10000)}}`)).toBe(true);
  });

  it('counts depth, not brackets: siblings do not add up', () => {
    expect(exceedsJsonDepth(`[${Array.from({ length: 1000 }, () => '[[1]]').join(',')}]`)).toBe(false);
  });

  it('ignores brackets inside strings, escaped quotes included', () => {
    expect(exceedsJsonDepth(JSON.stringify({ s: '['.repeat(1000) }))).toBe(false);
    expect(exceedsJsonDepth(JSON.stringify({ s: `"\\${'{'.repeat(1000)}` }))).toBe(false);
    expect(exceedsJsonDepth(`["\\"", ${nested(100)}]`)).toBe(true);
  });
});
