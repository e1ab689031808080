import exampleFlags from '../../flags.example.json';
import { flagDefinitionBytes } from '@flagship/flag-evaluation';
import { FlagFileError, parseFlagFile, readFlagFile, validateFlagFile } from './flag-file';

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

  it('reads a version-1 file as it was meant (every /attribute a reference), version 2 as written (literal without contextKind)', () => {
    const legacy = {
      ...flag('city'),
      rules: [
        { id: 'r', clauses: [{ attribute: '/address/city', op: 'in', values: ['Oslo'] }], variationId: 'on' },
        { id: 's', clauses: [], rollout: { bucketBy: '/org/id', variations: [{ variationId: 'on', weight: 1 }] } },
      ],
    };
    const upgraded = [
      { id: 'r', clauses: [{ attribute: '/address/city', contextKind: 'user', op: 'in', values: ['Oslo'] }], variationId: 'on' },
      { id: 's', clauses: [], rollout: { bucketBy: '/org/id', contextKind: 'user', variations: [{ variationId: 'on', weight: 1 }] } },
    ];
    const v1 = JSON.stringify({ version: 1, flags: [flag('a'), legacy] });
    // Both readers: the lazy one (a flag's text) and the whole-file one.
    expect(JSON.parse(readFlagFile(v1).flags[1]!.text).rules).toEqual(upgraded);
    expect(readFlagFile(v1).flags[0]!.text).toBe(JSON.stringify(flag('a'))); // untouched flags keep their text
    expect(parseFlagFile(v1).flags[1]!.rules).toEqual(upgraded);
    expect(validateFlagFile({ version: 1, flags: [legacy] }).flags[0]!.rules).toEqual(upgraded);
    const v2 = JSON.stringify({ version: 2, flags: [legacy] });
    expect(JSON.parse(readFlagFile(v2).flags[0]!.text).rules).toEqual(legacy.rules);
    expect(validateFlagFile({ version: 2, flags: [legacy] }).flags[0]!.rules).toEqual(legacy.rules);
  });

  it.each([
    ['not JSON', '{"version": 1,', /not valid JSON/],
    ['not an object', '[]', /must be a JSON object/],
    ['another version', '{"version": 3, "flags": []}', /version: must be 1 or 2 \(got 3\)/],
    ['no flags', '{"version": 1}', /flags: must be an array/],
    ['a bad tenantId', '{"version": 1, "tenantId": 5, "flags": []}', /tenantId: must be a string/],
    ['a duplicate key', JSON.stringify({ version: 1, flags: [flag('a'), flag('a')] }), /flags\[1\]\.key: duplicate of flags\[0\]/],
    ['an invalid flag', JSON.stringify({ version: 1, flags: [flag('a'), { ...flag('b'), defaultValue: 'no' }] }), /flags\[1\]\.defaultValue: must be a boolean/],
  ])('refuses %s, saying why in one line', (_name, text, message) => {
    expect(() => parseFlagFile(text)).toThrow(FlagFileError);
    expect(() => parseFlagFile(text)).toThrow(message);
  });

  describe('evaluator bounds (the same as the API)', () => {
    const withRule = (key: string, pattern: string) => ({
      ...flag(key),
      rules: [{ id: 'r', clauses: [{ attribute: 'email', op: 'matches', values: [pattern] }], variationId: 'on' }],
    });
    const requires = (key: string, ...keys: string[]) => ({ ...flag(key), prerequisites: keys.map((k) => ({ key: k, variationId: 'on' })) });
    /** Levels of two flags, each requiring both flags of the next level. */
    const diamond = (depth: number) => [
      flag('bottom'),
      ...Array.from({ length: depth }, (_, i) => ['a', 'b'].map((s) => requires(`l${i}${s}`, ...(i === depth - 1 ? ['bottom'] : [`l${i + 1}a`, `l${i + 1}b`])))).flat(),
    ];
    const read = (flags: unknown[]) => () => readFlagFile(JSON.stringify({ version: 1, flags }));
    const parsed = (flags: unknown[]) => () => validateFlagFile({ version: 1, flags });

    it.each([
      ['a backreference', '(a)\\1'],
      ['a lookahead', 'a(?=b)'],
      ['a lookbehind', '(?<=a)b'],
    ])('refuses a regular expression with %s, naming the flag and saying why', (_name, pattern) => {
      for (const load of [read, parsed]) {
        expect(load([flag('ok'), withRule('greedy', pattern)])).toThrow(
          /^1 problem\(s\): flags\[1\]\.rules\[0\]\.clauses\[0\]\.values\[0\]: regular expression cannot be evaluated in linear time/,
        );
      }
      expect(read([withRule('fine', '^(a+)+$')])().flags.map((f) => f.key)).toEqual(['fine']); // linear for RE2
    });

    it('refuses a prerequisite chain deeper than 10 or reaching more than 100 flags, naming the flag', () => {
      expect(read(diamond(10))().flags).toHaveLength(21);
      for (const load of [read, parsed]) {
        expect(load(diamond(11))).toThrow(/flags\[\d+\]\.prerequisites: its prerequisites lead through a chain of 11 prerequisites \(at most 10 deep\) \('l0a'\)/);
        expect(load(diamond(60))).toThrow(/reach more than 100 flags through prerequisites/);
      }
    });
  });

  describe('size bounds (OREP_FLAG_MAX_BYTES, OREP_FLAG_SET_MAX_BYTES)', () => {
    const big = (key: string, pad: number) => ({ ...flag(key), description: 'd'.repeat(pad) });
    const text = (flags: unknown[]) => JSON.stringify({ version: 2, flags });
    const size = (f: object) => flagDefinitionBytes(f);

    it('refuses a file holding a flag over the bound, naming it and its bytes; both readers', () => {
      const bounds = { maxFlagBytes: 1000, maxSetBytes: 100_000 };
      const flags = [flag('a'), big('huge', 2000)];
      for (const load of [() => readFlagFile(text(flags), bounds), () => validateFlagFile(JSON.parse(text(flags)), bounds)]) {
        expect(load).toThrow(`1 problem(s): flags[1]: its definition takes ${size(flags[1]!)} bytes, over the 1000 a flag may take`);
      }
      expect(readFlagFile(text([flag('a'), big('fits', 500)]), bounds).flags.map((f) => f.key)).toEqual(['a', 'fits']);
    });

    it('refuses a file whose flags together pass the bound', () => {
      const flags = [big('a', 600), big('b', 600), big('c', 600)];
      const bounds = { maxFlagBytes: 1000, maxSetBytes: size(flags[0]!) * 2 };
      const total = flags.reduce((n, f) => n + size(f), 0);
      expect(() => readFlagFile(text(flags), bounds)).toThrow(`flags: take ${total} bytes, over the ${bounds.maxSetBytes} all flags may take`);
      expect(() => parseFlagFile(text(flags), bounds)).toThrow(FlagFileError);
      expect(readFlagFile(text(flags.slice(0, 2)), bounds).flags).toHaveLength(2);
    });
  });

  describe('segments (beside flags, as the export writes them)', () => {
    const segment = (key: string, more: object = {}) => ({ key, name: key, included: [], excluded: [], includedContexts: [], excludedContexts: [], rules: [], ...more });
    const nesting = (key: string, inner: string) => segment(key, { rules: [{ id: 'r', clauses: [{ attribute: '', op: 'segmentMatch', values: [inner] }] }] });
    const text = (segments: unknown, flags: unknown[] = [flag('a')]) => JSON.stringify({ version: 2, flags, segments });
    const both = (t: string, bounds?: { maxFlagBytes: number; maxSetBytes: number }) => [() => readFlagFile(t, bounds), () => validateFlagFile(JSON.parse(t), bounds)];

    it('keeps them with the file, both readers; a file without segments has none', () => {
      const segments = [segment('beta', { included: ['u1'] }), nesting('outer', 'beta')];
      for (const load of both(text(segments))) expect(load().segments).toEqual(segments);
      expect(readFlagFile(text(undefined)).segments).toBeUndefined();
    });

    it('refuses a malformed segment, a duplicate key, a nested segment the file lacks and a cycle, by path', () => {
      for (const load of both(text([segment('s', { included: [1] })]))) expect(load).toThrow('segments[0].included[0]: must be a non-empty string');
      for (const load of both(text([segment('s'), segment('s')]))) expect(load).toThrow("segments[1].key: duplicate of segments[0] ('s')");
      for (const load of both(text([nesting('outer', 'gone')]))) expect(load).toThrow("segments[0].rules[0].clauses[0].values[0]: no segment 'gone' in this environment");
      for (const load of both(text([nesting('a', 'b'), nesting('b', 'a')]))) expect(load).toThrow(/segments\[0\]\.rules/);
      for (const load of both(text({ beta: segment('beta') }))) expect(load).toThrow('segments: must be an array');
    });

    it("holds each segment to a flag's bytes, and counts them in the set's", () => {
      const huge = segment('huge', { included: Array.from({ length: 200 }, (_, i) => `user-${i}`) });
      const bytes = flagDefinitionBytes(huge);
      for (const load of both(text([huge]), { maxFlagBytes: 1000, maxSetBytes: 100_000 })) {
        expect(load).toThrow(`segments[0]: its definition takes ${bytes} bytes, over the 1000 a flag or segment may take`);
      }
      const flagsOnly = flagDefinitionBytes(flag('a'));
      const fits = { maxFlagBytes: 10_000, maxSetBytes: flagsOnly + bytes };
      expect(readFlagFile(text([huge]), fits).segments).toHaveLength(1);
      expect(() => readFlagFile(text([huge]), { ...fits, maxSetBytes: fits.maxSetBytes - 1 })).toThrow(`flags: take ${flagsOnly + bytes} bytes`);
    });
  });

  it('lists at most five problems, then counts the rest', () => {
    const flags = Array.from({ length: 8 }, (_, i) => ({ ...flag(`f${i}`), enabled: 'yes' }));
    expect(() => parseFlagFile(JSON.stringify({ version: 1, flags }))).toThrow(/^8 problem\(s\): .*; and 3 more$/);
  });
});

describe('readFlagFile (flags kept as text, split without parsing the whole file)', () => {
  /** The reference: the whole document parsed at once, then validated. */
  const reference = (text: string) => validateFlagFile((() => {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new FlagFileError('not valid JSON');
    }
  })());
  const outcome = (f: () => { flags: unknown[] }) => {
    try {
      return { ok: true, flags: JSON.stringify(f().flags) };
    } catch (err) {
      return { ok: false, error: (err as Error).name };
    }
  };
  const tricky = {
    ...flag('tricky'),
    description: 'brackets ] } [ { and "quotes", a \\ backslash, commas, and ünïcødé ✓',
    rules: [{ id: 'r', clauses: [{ attribute: 'email', op: 'matches', values: ['^a\\\\]"}{,$'] }], variationId: 'on' }],
  };

  it.each([
    ['compact', JSON.stringify({ version: 1, environment: 'e', flags: [flag('a'), tricky, flag('b')] })],
    ['indented, flags first', JSON.stringify({ flags: [flag('a'), tricky], version: 1, generatedAt: 'now' }, null, 2)],
    ['CRLF and tabs', JSON.stringify({ version: 1, flags: [tricky] }, null, '\t').replace(/\n/g, '\r\n')],
    ['no flags', '{"version":1,"flags":[ ]}'],
  ])('reads the same flags as parsing the whole file: %s', (_name, text) => {
    const file = readFlagFile(text);
    expect(file.flags.map((f) => JSON.parse(f.text) as unknown)).toEqual(reference(text).flags);
    expect(file.flags.map((f) => f.key)).toEqual(reference(text).flags.map((f) => f.key));
    expect(parseFlagFile(text)).toEqual(reference(text));
  });

  it.each([
    ['flags twice (the last wins in JSON.parse)', '{"version":1,"flags":[{"key":1}],"flags":[]}'],
    ['a missing comma between flags', `{"version":1,"flags":[${JSON.stringify(flag('a'))} ${JSON.stringify(flag('b'))}]}`],
    ['garbage after the document', `{"version":1,"flags":[]} x`],
    ['flags not an array', '{"version":1,"flags":{}}'],
    ['an escaped key', '{"version":1,"fl\\u0061gs":[]}'],
  ])('leaves what it does not follow to the whole parse, with the same outcome: %s', (_name, text) => {
    expect(outcome(() => parseFlagFile(text))).toEqual(outcome(() => reference(text)));
  });

  it('agrees with the whole parse on 2,000 corrupted files (a character dropped, doubled or replaced)', () => {
    const text = JSON.stringify({ version: 1, environment: 'e', flags: [flag('a'), tricky, flag('b')] }, null, 1);
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const alphabet = '{}[]",:\\ 1ae';
    let refused = 0;
    for (let k = 0; k < 2000; k++) {
      const at = random(text.length);
      const mode = random(3);
      const c = alphabet[random(alphabet.length)]!;
      const bad = mode === 0 ? text.slice(0, at) + text.slice(at + 1) : mode === 1 ? text.slice(0, at) + text[at] + text.slice(at) : text.slice(0, at) + c + text.slice(at + 1);
      const mine = outcome(() => parseFlagFile(bad)); // readFlagFile, then each text parsed
      expect(mine).toEqual(outcome(() => reference(bad)));
      if (!mine.ok) refused++;
    }
    expect(refused).toBeGreaterThan(500); // the corruption does break files, so both paths are exercised
  });
});
