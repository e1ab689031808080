import type { MeasuredDefinition } from '@flagship/persistence';
import { addedBytes, largestAdditions, largestField, oversized, sizeErrors } from './flag-size';

const row = (key: string, environment: string, before: number, bytes: number): MeasuredDefinition => ({ flagId: `id-${key}`, key, environment, before, bytes });

describe('flag size rules', () => {
  it('a write may not grow a definition past the limit; one stored over it may shrink, stay or be renamed', () => {
    const measured = [
      row('new', 'production', 0, 101), // created over the limit
      row('grown', 'staging', 90, 120), // grown past it
      row('at-limit', 'production', 0, 100), // exactly the limit is allowed
      row('legacy-same', 'production', 500, 500), // stored before the limit, untouched by this write
      row('legacy-shrunk', 'production', 500, 300), // made smaller, still over: allowed, it is progress
    ];
    expect(oversized(measured, 100).map((d) => d.key)).toEqual(['new', 'grown']);
  });

  it('adds up what a write changed in every environment, shrinking included', () => {
    expect(addedBytes([row('a', 'production', 0, 100), row('a', 'staging', 0, 99), row('b', 'production', 50, 20)])).toBe(169);
    expect(addedBytes([])).toBe(0);
  });

  it('names the flags that add most, over every environment, largest first; none that shrank', () => {
    const measured = [row('a', 'production', 0, 100), row('a', 'staging', 0, 100), row('b', 'production', 0, 300), row('c', 'production', 500, 100), row('d', 'production', 0, 50)];
    expect(largestAdditions(measured, 2)).toEqual({ b: 300, a: 200 });
    expect(Object.keys(largestAdditions(measured, 10))).toEqual(['b', 'a', 'd']);
  });

  it('words one error per field, naming the environments and the largest size', () => {
    const errors = sizeErrors([row('a', 'production', 0, 150), row('a', 'staging', 0, 170), row('b', 'production', 0, 120)], 100, (d) => `flags.${d.key}`);
    expect(errors).toEqual({
      'flags.a': "the flag's definition would take 170 bytes in production, staging; one environment's definition of a flag may take at most 100 bytes",
      'flags.b': "the flag's definition would take 120 bytes in production; one environment's definition of a flag may take at most 100 bytes",
    });
  });

  it('blames the sent field whose JSON is longest, ignoring fields not sent', () => {
    const fields = ['defaultValue', 'variations', 'targets', 'enabled'];
    expect(largestField({ defaultValue: 'x', variations: [{ value: 'y'.repeat(50) }], targets: undefined }, fields)).toBe('variations');
    expect(largestField({ enabled: false }, fields)).toBe('enabled');
    expect(largestField({ name: 'only a name' }, fields)).toBeUndefined();
  });
});
