import { type Clause, evaluateFlag, type FlagDefinition, type JsonValue, MAX_REGEX_INPUT_LENGTH, type Operator } from './index';

/** A flag whose only rule has one clause: RULE_MATCH when the clause matches, else FALLTHROUGH. */
function flagWith(clause: Clause): FlagDefinition {
  return {
    key: 'op-test',
    type: 'boolean',
    defaultValue: false,
    enabled: true,
    variations: [
      { id: 'yes', name: 'yes', value: true, weight: 0 },
      { id: 'no', name: 'no', value: false, weight: 0 },
    ],
    targets: [],
    rules: [{ id: 'rule', clauses: [clause], variationId: 'yes' }],
    prerequisites: [],
  };
}

function clauseMatches(op: Operator, attribute: unknown, values: JsonValue[], negate = false): boolean {
  const ctx: Record<string, unknown> = { key: 'user-key' };
  if (attribute !== undefined) ctx.attr = attribute;
  const result = evaluateFlag(flagWith({ attribute: 'attr', op, values, negate }), ctx);
  expect(['RULE_MATCH', 'FALLTHROUGH']).toContain(result.reason);
  return result.reason === 'RULE_MATCH';
}

type Row = [op: Operator, attribute: unknown, values: JsonValue[], expected: boolean];

describe('in (strict equality)', () => {
  it.each<Row>([
    ['in', 'FR', ['FR', 'DE'], true],
    ['in', 'DE', ['FR', 'DE'], true],
    ['in', 'fr', ['FR'], false],
    ['in', 1, [1], true],
    ['in', 1, ['1'], false],
    ['in', '1', [1], false],
    ['in', true, [true], true],
    ['in', true, ['true'], false],
    ['in', 0, [false], false],
    ['in', 1.5, [1.5], true],
    ['in', 'x', [], false],
    ['in', { a: 1, b: [2] }, [{ b: [2], a: 1 }], true],
    ['in', { a: 1 }, [{ a: 1, b: 2 }], false],
    ['in', { a: '1' }, [{ a: 1 }], false],
  ])('%s: %p in %p -> %p', (op, attribute, values, expected) => {
    expect(clauseMatches(op, attribute, values)).toBe(expected);
  });
});

describe('array attributes match when any element matches', () => {
  it.each<Row>([
    ['in', ['a', 'b'], ['b'], true],
    ['in', ['a', 'b'], ['c'], false],
    ['in', [], ['a'], false],
    ['in', [1, '2'], [2], false],
    ['in', [[1, 2]], [[1, 2]], true],
    ['in', [1, 2], [[1, 2]], false],
    ['contains', ['foo', 'bar'], ['ar'], true],
    ['startsWith', [1, 'abc'], ['ab'], true],
    ['greaterThan', ['10', 3], [2], true],
    ['greaterThan', ['10'], [2], false],
  ])('%s: %p vs %p -> %p', (op, attribute, values, expected) => {
    expect(clauseMatches(op, attribute, values)).toBe(expected);
  });
});

describe('string operators take strings only', () => {
  it.each<Row>([
    ['startsWith', 'prefixabc', ['prefix'], true],
    ['startsWith', 'prefix', ['prefix'], true],
    ['startsWith', 'notprefix', ['prefix'], false],
    ['startsWith', 'Prefixabc', ['prefix'], false],
    ['startsWith', 'abc', ['x', 'a'], true],
    ['endsWith', 'abcsuffix', ['suffix'], true],
    ['endsWith', 'suffixno', ['suffix'], false],
    ['endsWith', 'abcSuffix', ['suffix'], false],
    ['contains', 'abcsubstringxyz', ['substring'], true],
    ['contains', 'abcsubstxyz', ['substring'], false],
    ['contains', 'abcSubstringxyz', ['substring'], false],
    ['startsWith', true, ['true'], false],
    ['startsWith', 99, ['99'], false],
    ['endsWith', 99, ['99'], false],
    ['contains', 99, ['9'], false],
    ['contains', '99', [9], false],
    ['startsWith', { a: 'b' }, ['['], false],
  ])('%s: %p vs %p -> %p', (op, attribute, values, expected) => {
    expect(clauseMatches(op, attribute, values)).toBe(expected);
  });
});

describe('matches (regular expressions)', () => {
  it.each<Row>([
    ['matches', 'matchThisName', ['^[A-Za-z]+'], true],
    ["matches", "_Don't match This Name", ['^[A-Za-z]+'], false],
    ['matches', 'xxabcxx', ['abc'], true], // a search, not a full match
    ['matches', 'ABC', ['abc'], false], // case-sensitive
    ['matches', 'abc', ['('], false], // invalid regex never matches
    ['matches', 'abc', ['(', 'b'], true], // ... but the other values still count
    ['matches', 'abc', ['[z-a]'], false],
    ['matches', 99, ['99'], false],
    ['matches', true, ['true'], false],
    ['matches', '99', [99], false],
  ])('%s: %p vs %p -> %p', (op, attribute, values, expected) => {
    expect(clauseMatches(op, attribute, values)).toBe(expected);
  });

  it('evaluates a regex repeatedly without carrying state between calls', () => {
    for (let i = 0; i < 5; i++) expect(clauseMatches('matches', 'aaa', ['a'])).toBe(true);
  });

  it.each<Row>([
    // JavaScript syntax (re2js translates `[^]`, `\u`, named groups); `$` at the end only; `.` skips \n.
    ['matches', 'a\nb', ['a.b'], false],
    ['matches', 'a\nb', ['a[^]b'], true],
    ['matches', 'caf\u00e9', ['f\\u00e9$'], true],
    ['matches', 'a/b', ['a\\/b'], true],
    ['matches', 'ab\n', ['ab$'], false],
    ['matches', 'user-42@example.com', ['^[\\w.-]+@example\\.com$'], true],
    ['matches', 'v1.10', ['^v\\d+\\.\\d{1,3}$'], true],
    ['matches', 'ab', ['(?<first>a)b'], true],
    ['matches', 'aXb', ['a\\x58b', 'none'], true],
  ])('ordinary patterns keep their JavaScript meaning: %s %p vs %p -> %p', (op, attribute, values, expected) => {
    expect(clauseMatches(op, attribute, values)).toBe(expected);
  });

  it.each<Row>([
    // Stored before validation refused them: never run on a backtracking engine, so never matched.
    ['matches', 'aa', ['(a)\\1'], false],
    ['matches', 'ab', ['a(?=b)'], false],
    ['matches', 'ab', ['(?<=a)b'], false],
    ['matches', 'ab', ['a(?!c)'], false],
    ['matches', 'a'.repeat(2000), ['a{2000}'], false],
    ['matches', 'ab', ['a(?!c)', 'b'], true], // the other values still count
    ['matches', 'ab', ['b|' + 'x'.repeat(600)], false], // longer than MAX_REGEX_PATTERN_LENGTH
  ])('a pattern the linear engine refuses never matches: %s %p vs %p -> %p', (op, attribute, values, expected) => {
    expect(clauseMatches(op, attribute, values)).toBe(expected);
  });

  it('reads at most MAX_REGEX_INPUT_LENGTH characters: a longer value does not match (negated: matches)', () => {
    expect(MAX_REGEX_INPUT_LENGTH).toBe(1024);
    expect(clauseMatches('matches', 'a'.repeat(1024), ['^a+$'])).toBe(true);
    expect(clauseMatches('matches', 'a'.repeat(1025), ['^a+$'])).toBe(false);
    expect(clauseMatches('matches', 'a'.repeat(1025), ['^a+$'], true)).toBe(true);
    expect(clauseMatches('matches', ['a'.repeat(1025), 'a'], ['^a+$'])).toBe(true); // array elements each
  });

  it('runs `^(a+)+$` in linear time (RE2), whatever the input', () => {
    // 30 characters took about 14 s on JavaScript's backtracking engine (it doubles per character),
    // so finishing at all proves the bound; the time limit is only a generous backstop.
    const started = process.hrtime.bigint();
    for (const n of [30, 40, MAX_REGEX_INPUT_LENGTH - 1]) expect(clauseMatches('matches', 'a'.repeat(n) + '!', ['^(a+)+$'])).toBe(false);
    expect(clauseMatches('matches', 'a'.repeat(1000), ['^(a+)+$'])).toBe(true);
    expect(Number(process.hrtime.bigint() - started) / 1e6).toBeLessThan(2000);
  });
});

describe('numeric operators take numbers only', () => {
  it.each<Row>([
    ['lessThan', 1, [2], true],
    ['lessThan', 2, [2], false],
    ['lessThan', 1.5, [1.6], true],
    ['lessThan', -1, [0], true],
    ['lessThan', 5, [1, 10], true], // any value
    ['lessThanOrEqual', 2, [2], true],
    ['lessThanOrEqual', 3, [2], false],
    ['greaterThan', 3, [2], true],
    ['greaterThan', 2, [2], false],
    ['greaterThan', 5, [10, 1], true],
    ['greaterThanOrEqual', 2, [2], true],
    ['greaterThanOrEqual', 1, [2], false],
    ['lessThan', '1', [2], false], // numbers as strings do not count
    ['lessThan', 1, ['2'], false],
    ['greaterThan', '10', [2], false],
    ['greaterThan', true, [0], false],
    ['greaterThan', null, [0], false],
    ['lessThan', 1, [], false],
  ])('%s: %p vs %p -> %p', (op, attribute, values, expected) => {
    expect(clauseMatches(op, attribute, values)).toBe(expected);
  });
});

describe('before / after take epoch milliseconds or RFC 3339', () => {
  const same = ['2017-12-06T00:00:00.000-07:00', '2017-12-06T07:00:00.000Z', '2017-12-06T07:00:00Z', 1512543600000];
  const later = ['2017-12-06T00:01:01.000-07:00', '2017-12-06T07:01:01.000Z', 1512543601000];

  it('treats every spelling of the same instant as equal (neither before nor after)', () => {
    for (const a of same) {
      for (const b of same) {
        expect(clauseMatches('before', a, [b])).toBe(false);
        expect(clauseMatches('after', a, [b])).toBe(false);
      }
    }
  });

  it('orders instants across spellings', () => {
    for (const lower of same) {
      for (const higher of later) {
        expect(clauseMatches('before', lower, [higher])).toBe(true);
        expect(clauseMatches('after', higher, [lower])).toBe(true);
        expect(clauseMatches('after', lower, [higher])).toBe(false);
        expect(clauseMatches('before', higher, [lower])).toBe(false);
      }
    }
  });

  it.each([
    ['2017-12-06X00:00:00.000-07:00'],
    ['2017-12-06'],
    ['00:00:00.000-07:00'],
    ['badstring'],
    [''],
    ['1512543600000'],
    ['2017-13-06T00:00:00Z'],
    ['2017-02-30T00:00:00Z'],
    ['2017-12-06T24:00:00Z'],
    ['2017-12-06T00:00:60Z'],
    ['2017-12-06T00:00:00'],
    [true],
    [{ t: 1 }],
  ])('refuses %p on either side', (bad) => {
    for (const op of ['before', 'after'] as const) {
      expect(clauseMatches(op, bad, [1512543600000])).toBe(false);
      expect(clauseMatches(op, bad, ['2017-12-06T07:00:00Z'])).toBe(false);
      expect(clauseMatches(op, 1512543600000, [bad as JsonValue])).toBe(false);
    }
  });

  it('keeps sub-second precision and lowercase separators', () => {
    expect(clauseMatches('after', '2017-12-06T07:00:00.001Z', ['2017-12-06T07:00:00Z'])).toBe(true);
    expect(clauseMatches('after', '2017-12-06T07:00:00.0001Z', ['2017-12-06T07:00:00Z'])).toBe(true);
    expect(clauseMatches('before', '2017-12-06t06:59:59z', [1512543600000])).toBe(true);
  });

  it('uses the highest value for before and the lowest for after', () => {
    expect(clauseMatches('before', 1000, [10, 2000])).toBe(true);
    expect(clauseMatches('after', 1000, [2000, 10])).toBe(true);
    expect(clauseMatches('after', 1000, ['invalid', 2000])).toBe(false);
  });
});

describe('semVer operators', () => {
  it.each([
    ['2.0.0', '2.0.0'],
    ['2.0', '2.0.0'],
    ['2', '2.0.0'],
    ['2.0.0+build', '2.0.0'],
    ['2.0.0-rc', '2.0.0-rc'],
    ['2.0-rc', '2.0.0-rc'],
    ['2-rc', '2.0.0-rc'],
    ['2.0.0-rc+build', '2.0.0-rc'],
  ])('semVerEqual: %s equals %s (padding, build metadata ignored)', (a, b) => {
    expect(clauseMatches('semVerEqual', a, [b])).toBe(true);
    expect(clauseMatches('semVerEqual', b, [a])).toBe(true);
  });

  it.each([
    ['1.0.0', '2.0.0'],
    ['1.0', '2.0'],
    ['1', '2'],
    ['2.0.0', '2.1.0'],
    ['2.0', '2.1'],
    ['2.0.0', '2.0.1'],
    ['2.0.0-rc', '2.0.0'],
    ['2.0.0-rc', '2.0.0-rc.1'],
    ['2.0.0-rc.2.green', '2.0.0-rc.10.green'],
    ['2.0.0-rc.2.green', '2.0.0-rc.2.red'],
    ['2.0.0-rc.2.green', '2.0.0-rc.2.green.1'],
    ['2.0.0-rc.2.green', '2.0.1-rc.2.green'],
    ['2.0.0-1', '2.0.0-alpha'],
    ['9.0.0', '10.0.0'],
    ['99999999999999999999.0.0', '100000000000000000000.0.0'],
  ])('%s < %s', (lower, higher) => {
    expect(clauseMatches('semVerLessThan', lower, [higher])).toBe(true);
    expect(clauseMatches('semVerGreaterThan', higher, [lower])).toBe(true);
    expect(clauseMatches('semVerLessThan', higher, [lower])).toBe(false);
    expect(clauseMatches('semVerGreaterThan', lower, [higher])).toBe(false);
    expect(clauseMatches('semVerEqual', lower, [higher])).toBe(false);
  });

  it.each([['v2.0.0'], ['02.0.0'], ['2.0.0.0'], [' 2.0.0'], ['2.0.0-'], ['2.0.0-01'], ['x'], ['']])(
    'refuses %p on either side',
    (bad) => {
      expect(clauseMatches('semVerEqual', bad, ['2.0.0'])).toBe(false);
      expect(clauseMatches('semVerEqual', '2.0.0', [bad])).toBe(false);
      expect(clauseMatches('semVerLessThan', bad, ['3.0.0'])).toBe(false);
      expect(clauseMatches('semVerGreaterThan', '3.0.0', [bad])).toBe(false);
    },
  );

  it('refuses non-strings', () => {
    expect(clauseMatches('semVerEqual', 2, ['2.0.0'])).toBe(false);
    expect(clauseMatches('semVerEqual', '2.0.0', [2])).toBe(false);
    expect(clauseMatches('semVerGreaterThan', 3, ['2.0.0'])).toBe(false);
  });

  it('gives the same answer on repeated (cached) parses', () => {
    for (let i = 0; i < 3; i++) expect(clauseMatches('semVerGreaterThan', '1.10.0', ['1.9.0'])).toBe(true);
  });
});

describe('negate and missing attributes', () => {
  it('inverts a match and a non-match', () => {
    expect(clauseMatches('in', 'FR', ['FR'], true)).toBe(false);
    expect(clauseMatches('in', 'US', ['FR'], true)).toBe(true);
    expect(clauseMatches('lessThan', '1', [2], true)).toBe(true); // wrong type is a non-match, inverted
    expect(clauseMatches('matches', 'abc', ['('], true)).toBe(true); // invalid regex: non-match, inverted
  });

  it('inverts the any-element result for arrays (and an empty array never matched)', () => {
    expect(clauseMatches('in', ['a', 'b'], ['b'], true)).toBe(false);
    expect(clauseMatches('in', ['a'], ['b'], true)).toBe(true);
    expect(clauseMatches('in', [], ['b'], true)).toBe(true);
  });

  it.each([[undefined], [null]])('never matches a %p attribute, negated or not', (missing) => {
    for (const op of ['in', 'startsWith', 'lessThan', 'before', 'semVerEqual', 'matches'] as const) {
      expect(clauseMatches(op, missing, ['x'])).toBe(false);
      expect(clauseMatches(op, missing, ['x'], true)).toBe(false);
    }
    expect(clauseMatches('in', missing, [null])).toBe(false);
  });

  it('does not see inherited members as attributes', () => {
    const flag = flagWith({ attribute: 'toString', op: 'in', values: ['x'], negate: true });
    expect(evaluateFlag(flag, { key: 'k' }).reason).toBe('FALLTHROUGH');
    const proto = flagWith({ attribute: '__proto__', op: 'in', values: ['x'], negate: true });
    expect(evaluateFlag(proto, { key: 'k' }).reason).toBe('FALLTHROUGH');
  });

  it('treats an unknown operator as never matching a value, as LaunchDarkly does', () => {
    expect(clauseMatches('isOneOf' as Operator, 'x', ['x'])).toBe(false);
    expect(clauseMatches('isOneOf' as Operator, 'x', ['x'], true)).toBe(true);
  });
});

describe('attributes', () => {
  // A clause with a context kind names its attribute by reference; one without, literally (LaunchDarkly).
  const evalWith = (attribute: string, op: Operator, values: JsonValue[], ctx: Record<string, unknown>, contextKind?: string) =>
    evaluateFlag(flagWith(contextKind === undefined ? { attribute, op, values } : { attribute, contextKind, op, values }), ctx);
  const evalRef = (attribute: string, op: Operator, values: JsonValue[], ctx: Record<string, unknown>) => evalWith(attribute, op, values, ctx, 'user');

  it('reads `key` as the context key, whichever field supplied it', () => {
    expect(evalWith('key', 'in', ['u1'], { key: 'u1' }).reason).toBe('RULE_MATCH');
    expect(evalWith('key', 'in', ['u1'], { targetingKey: 'u1' }).reason).toBe('RULE_MATCH');
    expect(evalWith('key', 'in', ['u1'], { userId: 'u1' }).reason).toBe('RULE_MATCH');
    expect(evalWith('key', 'startsWith', ['u'], { key: 'u1', targetingKey: 'x' }).reason).toBe('RULE_MATCH');
    expect(evalRef('key', 'in', ['u1'], { key: 'u1' }).reason).toBe('RULE_MATCH');
    expect(evalRef('/key', 'in', ['u1'], { key: 'u1' }).reason).toBe('RULE_MATCH');
    // Without a kind, "/key" is an attribute of that name, not the key.
    expect(evalWith('/key', 'in', ['u1'], { key: 'u1' }).reason).toBe('FALLTHROUGH');
    expect(evalWith('/key', 'in', ['v'], { key: 'u1', '/key': 'v' }).reason).toBe('RULE_MATCH');
  });

  it('with a context kind, reads /path references into nested objects, with ~1 and ~0 escapes', () => {
    const ctx = { key: 'k', address: { city: 'Paris' }, 'a/b': { 'c~d': 1 }, list: [{ x: 1 }], '/address/city': 'Lyon' };
    expect(evalRef('/address/city', 'in', ['Paris'], ctx).reason).toBe('RULE_MATCH');
    expect(evalRef('/address/city', 'in', ['Lyon'], ctx).reason).toBe('FALLTHROUGH');
    expect(evalRef('/a~1b/c~0d', 'in', [1], ctx).reason).toBe('RULE_MATCH');
    expect(evalRef('/address/zip', 'in', ['x'], ctx).reason).toBe('FALLTHROUGH');
    expect(evalRef('/list/0/x', 'in', [1], ctx).reason).toBe('FALLTHROUGH'); // arrays are not indexed
    expect(evalRef('address', 'in', [{ city: 'Paris' }], ctx).reason).toBe('RULE_MATCH');
    expect(evalRef('/~1address~1city', 'in', ['Lyon'], ctx).reason).toBe('RULE_MATCH'); // the escaped literal
  });

  it('without a context kind, takes the attribute literally even when it starts with a slash', () => {
    const ctx = { key: 'k', address: { city: 'Paris' }, '/address/city': 'Lyon', '/a': 1, a: 2, '/a~1b': 3 };
    expect(evalWith('/address/city', 'in', ['Lyon'], ctx).reason).toBe('RULE_MATCH');
    expect(evalWith('/address/city', 'in', ['Paris'], ctx).reason).toBe('FALLTHROUGH');
    expect(evalWith('/a', 'in', [1], ctx).reason).toBe('RULE_MATCH');
    expect(evalWith('/a', 'in', [2], ctx).reason).toBe('FALLTHROUGH');
    expect(evalWith('/a~1b', 'in', [3], ctx).reason).toBe('RULE_MATCH'); // no unescaping either
    expect(evalWith('/address/city', 'in', ['Paris'], { key: 'k', address: { city: 'Paris' } }).reason).toBe('FALLTHROUGH');
    // What is invalid as a reference is an ordinary name here.
    for (const name of ['/', '/a//b', '/a/', '/a~2']) expect(evalWith(name, 'in', ['x'], { key: 'k', [name]: 'x' }).reason).toBe('RULE_MATCH');
  });

  it('takes a name without a leading slash literally, with or without a kind', () => {
    for (const kind of [undefined, 'user']) {
      expect(evalWith('a.b', 'in', [1], { key: 'k', 'a.b': 1 }, kind).reason).toBe('RULE_MATCH');
      expect(evalWith('a/b', 'in', [1], { key: 'k', 'a/b': 1 }, kind).reason).toBe('RULE_MATCH');
      expect(evalWith('a~b', 'in', [1], { key: 'k', 'a~b': 1 }, kind).reason).toBe('RULE_MATCH');
    }
  });

  it('finds no attribute of a context kind ours do not have (negated or not), as LaunchDarkly does for a missing kind', () => {
    expect(evalWith('org', 'in', ['acme'], { key: 'k', org: 'acme' }, 'organization').reason).toBe('FALLTHROUGH');
    expect(evaluateFlag(flagWith({ attribute: 'org', contextKind: 'organization', op: 'in', values: ['x'], negate: true }), { key: 'k', org: 'acme' }).reason).toBe('FALLTHROUGH');
  });

  it.each([['/', 'user'], ['/a//b', 'user'], ['/a/', 'user'], ['/a~2', 'user'], ['', 'user'], ['', undefined]])(
    'makes the flag malformed when an evaluation reaches the invalid attribute %p (contextKind %p)',
    (attribute, contextKind) => {
      const result = evalWith(attribute, 'in', ['x'], { key: 'k' }, contextKind);
      expect(result).toMatchObject({ reason: 'ERROR', errorKind: 'MALFORMED_FLAG', value: false });
    },
  );
});
