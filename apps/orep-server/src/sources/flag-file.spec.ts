import exampleFlags from '../../flags.example.json';
import { FlagFileError, parseFlagFile, validateFlagFile } from './flag-file';

const flag = (key: string) => ({
  key,
  type: 'boolean',
  defaultValue: false,
  variations: [{ id: 'on', name: 'On', value: true, weight: 0 }],
  enabled: true,
  targets: [],
  rules: [],
  prerequisites: [],
});

describe('flag file', () => {
  it('parses the export format, ignoring fields of the export that evaluation does not use', () => {
    const file = parseFlagFile(
      JSON.stringify({
        version: 1,
        tenantId: 't',
        environment: 'production',
        generatedAt: '2025-01-01T00:00:00Z',
        flags: [{ ...flag('a'), name: 'A', description: '', tags: ['x'], projectId: null }],
      }),
    );
    expect(file.flags.map((f) => f.key)).toEqual(['a']);
    expect(file.environment).toBe('production');
  });

  it('the shipped example is valid and has flags of every type', () => {
    const file = validateFlagFile(exampleFlags);
    expect(new Set(file.flags.map((f) => f.type))).toEqual(new Set(['boolean', 'string', 'number', 'json']));
    const ops = new Set(file.flags.flatMap((f) => f.rules.flatMap((r) => r.clauses.map((c) => c.op))));
    expect(ops.size).toBeGreaterThanOrEqual(10);
  });

  it.each([
    ['not JSON', '{"version": 1,', /not valid JSON/],
    ['not an object', '[]', /must be a JSON object/],
    ['another version', '{"version": 2, "flags": []}', /version: must be 1 \(got 2\)/],
    ['no flags', '{"version": 1}', /flags: must be an array/],
    ['a bad tenantId', '{"version": 1, "tenantId": 5, "flags": []}', /tenantId: must be a string/],
    ['a duplicate key', JSON.stringify({ version: 1, flags: [flag('a'), flag('a')] }), /flags\[1\]\.key: duplicate of flags\[0\]/],
    ['an invalid flag', JSON.stringify({ version: 1, flags: [flag('a'), { ...flag('b'), defaultValue: 'no' }] }), /flags\[1\]\.defaultValue: must be a boolean/],
  ])('refuses %s, saying why in one line', (_name, text, message) => {
    expect(() => parseFlagFile(text)).toThrow(FlagFileError);
    expect(() => parseFlagFile(text)).toThrow(message);
  });

  it('lists at most five problems, then counts the rest', () => {
    const flags = Array.from({ length: 8 }, (_, i) => ({ ...flag(`f${i}`), enabled: 'yes' }));
    expect(() => parseFlagFile(JSON.stringify({ version: 1, flags }))).toThrow(/^8 problem\(s\): .*; and 3 more$/);
  });
});
