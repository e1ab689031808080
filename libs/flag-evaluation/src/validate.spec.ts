import {
  checkFlagDefinition,
  checkSegmentDefinition,
  evaluateFlag,
  type FlagDefinition,
  MAX_PREREQUISITE_DEPTH,
  MAX_PREREQUISITE_FLAGS,
  MAX_REGEX_PATTERN_LENGTH,
  prerequisiteBoundProblems,
  validateFlagDefinition,
  valueMatchesType,
} from './index';

function validFlag(overrides: Partial<FlagDefinition> = {}): FlagDefinition {
  return {
    key: 'checkout-v2',
    type: 'string',
    defaultValue: 'old',
    enabled: true,
    variations: [
      { id: 'old', name: 'Old', value: 'old', weight: 0 },
      { id: 'new', name: 'New', value: 'new', weight: 0, description: 'the new one' },
    ],
    targets: [{ variationId: 'new', values: ['qa-1'] }],
    rules: [
      {
        id: 'beta',
        clauses: [
          { attribute: 'groups', op: 'in', values: ['beta'] },
          { attribute: 'appVersion', op: 'semVerGreaterThan', values: ['2.1'] },
          { attribute: 'signup', op: 'after', values: ['2024-01-01T00:00:00Z', 1700000000000] },
          { attribute: 'email', op: 'matches', values: ['@example\\.com$'], negate: true },
        ],
        variationId: 'new',
      },
      {
        id: 'split',
        clauses: [],
        rollout: { variations: [{ variationId: 'old', weight: 1 }, { variationId: 'new', weight: 3 }], bucketBy: 'org', seed: 42 },
      },
    ],
    prerequisites: [{ key: 'payments', variationId: 'on' }],
    salt: 'abc',
    version: 3,
    ...overrides,
  };
}

/** The problems as "path: message" strings, to compare whole lists. */
const problems = (flag: unknown, lookup?: (key: string) => FlagDefinition | undefined) =>
  validateFlagDefinition(flag as FlagDefinition, lookup).map((p) => `${p.path}: ${p.message}`);
const warnings = (flag: unknown) => checkFlagDefinition(flag as FlagDefinition).warnings.map((p) => `${p.path}: ${p.message}`);

describe('validateFlagDefinition', () => {
  it('accepts a valid flag', () => {
    expect(problems(validFlag())).toEqual([]);
  });

  it('accepts a minimal flag without targets, rules or prerequisites', () => {
    const { targets: _t, rules: _r, prerequisites: _p, ...minimal } = validFlag();
    expect(problems(minimal)).toEqual([]);
  });

  it('refuses something that is not an object', () => {
    expect(problems(null)).toEqual([': must be an object']);
    expect(problems([])).toEqual([': must be an object']);
  });

  it('checks the top-level fields', () => {
    expect(
      problems({ ...validFlag(), key: '', type: 'text', enabled: 'yes', salt: 5, version: -1, variations: {} }),
    ).toEqual([
      'key: must be a non-empty string',
      'type: must be one of boolean, string, number, json',
      'enabled: must be a boolean',
      'salt: must be a string',
      'version: must be a non-negative integer',
      'variations: must be an array',
      "targets[0].variationId: names no variation of this flag ('new')",
      "rules[0].variationId: names no variation of this flag ('new')",
      "rules[1].rollout.variations[0].variationId: names no variation of this flag ('old')",
      "rules[1].rollout.variations[1].variationId: names no variation of this flag ('new')",
    ]);
  });

  it('checks values against the flag type', () => {
    expect(problems(validFlag({ defaultValue: 1, offValue: true }))).toEqual([
      "defaultValue: must be a string (the flag's type is string)",
      "offValue: must be a string (the flag's type is string)",
    ]);
    expect(
      problems(
        validFlag({
          variations: [
            { id: 'old', name: 'Old', value: 'old', weight: 0 },
            { id: 'new', name: 'New', value: 2, weight: 0 },
          ],
        }),
      ),
    ).toEqual(["variations[1].value: must be a string (the flag's type is string)"]);
  });

  it('checks variations: ids unique, names, weights finite and not negative', () => {
    expect(
      problems(
        validFlag({
          variations: [
            { id: 'old', name: 'Old', value: 'old', weight: -1 },
            { id: 'new', name: 'New', value: 'new', weight: Number.POSITIVE_INFINITY },
            { id: 'old', name: 'Again', value: 'x', weight: 0 },
            { id: '', name: 7, value: 'y', weight: 0 } as never,
          ],
        }),
      ),
    ).toEqual([
      'variations[0].weight: must be a finite number >= 0',
      'variations[1].weight: must be a finite number >= 0',
      "variations[2].id: duplicate variation id 'old'",
      'variations[3].id: must be a non-empty string',
      'variations[3].name: must be a string',
    ]);
  });

  it('checks targets: known variation, string keys, a key in one target only', () => {
    expect(
      problems(
        validFlag({
          targets: [
            { variationId: 'new', values: ['a', 'b'] },
            { variationId: 'old', values: ['b', 3 as never] },
            { variationId: 'gone', values: [] },
          ],
        }),
      ),
    ).toEqual(['targets[1].values[1]: must be a non-empty string', "targets[2].variationId: names no variation of this flag ('gone')"]);
  });

  it('warns about (and accepts) a context key already targeted: the first target wins, as in LaunchDarkly', () => {
    const flag = validFlag({
      targets: [
        { variationId: 'new', values: ['a', 'b'] },
        { variationId: 'old', values: ['b'] },
      ],
    });
    expect(problems(flag)).toEqual([]);
    expect(warnings(flag)).toEqual(["targets[1].values[0]: context key 'b' is already targeted by targets[0], which wins"]);
  });

  it('checks rules: ids, exactly one of variationId and rollout, known variations', () => {
    expect(
      problems(
        validFlag({
          rules: [
            { id: 'a', clauses: [] },
            { id: 'a', clauses: [], variationId: 'new', rollout: { variations: [{ variationId: 'new', weight: 1 }] } },
            { id: '', clauses: [], variationId: 'nope' },
            { id: 'c', clauses: 'x' as never, variationId: 'new' },
          ],
        }),
      ),
    ).toEqual([
      'rules[0]: needs exactly one of variationId and rollout',
      "rules[1].id: duplicate rule id 'a'",
      'rules[1]: needs exactly one of variationId and rollout',
      'rules[2].id: must be a non-empty string',
      "rules[2].variationId: names no variation of this flag ('nope')",
      'rules[3].clauses: must be an array',
    ]);
  });

  it('refuses clauses that cannot be evaluated: attribute reference, operator, shape', () => {
    const clauses = [
      { attribute: '', op: 'in', values: ['x'] },
      { attribute: 'a', op: 'oneOf', values: ['x'] },
      { attribute: '/a//b', contextKind: 'user', op: 'in', values: ['x'], negate: 'yes' },
      { attribute: 'a', op: 'in', values: 'x' },
      { attribute: 'a', contextKind: 'org anization', op: 'in', values: ['x'] },
      { attribute: 'a', contextKind: 'multi', op: 'in', values: ['x'] },
      { attribute: 'a', contextKind: 'organization', op: 'in', values: ['x'] },
    ];
    expect(problems(validFlag({ rules: [{ id: 'r', clauses: clauses as never, variationId: 'new' }] }))).toEqual([
      'rules[0].clauses[0].attribute: must be an attribute name, not empty (without contextKind it is taken literally, even when it starts with /)',
      "rules[0].clauses[1].op: unknown operator 'oneOf'",
      'rules[0].clauses[2].attribute: must be an attribute reference: a name, `key`, or a /path (with contextKind the attribute is a reference)',
      'rules[0].clauses[2].negate: must be a boolean',
      'rules[0].clauses[3].values: must be an array',
      "rules[0].clauses[4].contextKind: must be a context kind (letters, digits, '.', '_' and '-'; not 'kind' or 'multi'), or absent for 'user'",
      "rules[0].clauses[5].contextKind: must be a context kind (letters, digits, '.', '_' and '-'; not 'kind' or 'multi'), or absent for 'user'",
    ]);
  });

  it('refuses unknown fields anywhere inside a flag, naming their path (CONTRACT.md section 4); its own fields are its container’s', () => {
    const flag = {
      ...validFlag(),
      bogus: 1,
      variations: [{ id: 'old', name: 'Old', value: 'old', weight: 0, colour: 'red' }, { id: 'new', name: 'New', value: 'new', weight: 0 }],
      targets: [{ variationId: 'new', values: ['qa-1'], contextKind: 'organization', bogusField: true }],
      contextTargets: [{ contextKind: 'device', variationId: 'new', values: ['d'], extra: 1 }],
      rules: [{ id: 'r', clauses: [{ attribute: 'a', op: 'in', values: ['x'], kind: 'user' }], rollout: { variations: [{ variationId: 'new', weight: 1, untracked: true }], kind: 'rollout' }, trackEvents: true }],
      prerequisites: [{ key: 'other', variationId: 'x', version: 2 }],
    };
    expect(problems(flag as unknown as FlagDefinition)).toEqual([
      'variations[0].colour: is not an allowed field',
      'targets[0].bogusField: is not an allowed field',
      'contextTargets[0].extra: is not an allowed field',
      'rules[0].trackEvents: is not an allowed field',
      'rules[0].clauses[0].kind: is not an allowed field',
      'rules[0].rollout.kind: is not an allowed field',
      'rules[0].rollout.variations[0].untracked: is not an allowed field',
      'prerequisites[0].version: is not an allowed field',
    ]);
  });

  it('checks targets and contextTargets of any kind, warning where LaunchDarkly would never read a key', () => {
    const flag = validFlag({
      targets: [
        { variationId: 'new', values: ['k'], contextKind: 'organization' },
        { variationId: 'old', values: ['k'] },
      ],
      contextTargets: [
        { contextKind: 'organization', variationId: 'new', values: ['o', 'o2'] },
        { contextKind: 'user', variationId: 'old', values: ['stray'] },
        { contextKind: 'device', variationId: 'gone', values: ['d'] },
        { contextKind: 'organization', variationId: 'new', values: ['o2'] },
        { contextKind: 'org anization', variationId: 'new', values: [] },
      ],
    });
    expect(problems(flag)).toEqual([
      "contextTargets[2].variationId: names no variation of this flag ('gone')",
      "contextTargets[4].contextKind: must be a context kind (letters, digits, '.', '_' and '-'; not 'kind' or 'multi'), or absent for 'user'",
    ]);
    expect(warnings(flag)).toEqual([
      "contextTargets[1].values: is not read: a user entry stands for the first 'targets' entry of its variation; list the keys there",
      "contextTargets[3].values[0]: context key 'o2' is already targeted by contextTargets[0], which wins",
    ]);
  });

  it('accepts any non-empty literal attribute without contextKind, even what is no valid reference', () => {
    const clauses = ['/', '/a//b', '/a~2', 'key', '/key'].map((attribute) => ({ attribute, op: 'in', values: ['x'] }));
    expect(problems(validFlag({ rules: [{ id: 'r', clauses: clauses as never, variationId: 'new' }] }))).toEqual([]);
  });

  // LaunchDarkly stores values an operator can never use and evaluates them as non-matching; so do
  // we, reporting each as a warning instead of refusing the flag.
  const neverMatching = [
    { attribute: 'a', op: 'in', values: [] },
    { attribute: 'a', op: 'lessThan', values: ['5', 5] },
    { attribute: 'a', op: 'startsWith', values: [1, null, true, { x: 'a' }] },
    { attribute: 'a', op: 'matches', values: ['(unclosed'] },
    { attribute: 'a', op: 'before', values: ['2024-01-01', 'yesterday'] },
    { attribute: 'a', op: 'semVerEqual', values: ['v1.2.3', '1.2'] },
    { attribute: 'a', op: 'in', values: [null, 'x'] },
    { attribute: 'a', op: 'greaterThan', values: [null, '7', [7]] },
    { attribute: 'a', op: 'after', values: [true, '1700000000000'] },
    { attribute: 'a', op: 'in', values: [], negate: true },
  ];

  it('accepts clause values their operator can never use, with a warning naming each', () => {
    const flag = validFlag({ rules: [{ id: 'r', clauses: neverMatching as never, variationId: 'new' }] });
    expect(problems(flag)).toEqual([]);
    expect(warnings(flag)).toEqual([
      'rules[0].clauses[0].values: is empty: the clause never matches',
      "rules[0].clauses[1].values[0]: must be a number for 'lessThan': this value never matches",
      "rules[0].clauses[2].values[0]: must be a string for 'startsWith': this value never matches",
      "rules[0].clauses[2].values[1]: must be a string for 'startsWith': this value never matches",
      "rules[0].clauses[2].values[2]: must be a string for 'startsWith': this value never matches",
      "rules[0].clauses[2].values[3]: must be a string for 'startsWith': this value never matches",
      "rules[0].clauses[3].values[0]: is not a valid regular expression for 'matches': this value never matches",
      "rules[0].clauses[4].values[0]: must be epoch milliseconds or an RFC 3339 date-time for 'before': this value never matches",
      "rules[0].clauses[4].values[1]: must be epoch milliseconds or an RFC 3339 date-time for 'before': this value never matches",
      "rules[0].clauses[5].values[0]: must be a semantic version such as 1.2.3 (no leading v) for 'semVerEqual': this value never matches",
      "rules[0].clauses[6].values[0]: is null for 'in': this value never matches",
      "rules[0].clauses[7].values[0]: must be a number for 'greaterThan': this value never matches",
      "rules[0].clauses[7].values[1]: must be a number for 'greaterThan': this value never matches",
      "rules[0].clauses[7].values[2]: must be a number for 'greaterThan': this value never matches",
      "rules[0].clauses[8].values[0]: must be epoch milliseconds or an RFC 3339 date-time for 'after': this value never matches",
      "rules[0].clauses[8].values[1]: must be epoch milliseconds or an RFC 3339 date-time for 'after': this value never matches",
      'rules[0].clauses[9].values: is empty: the clause matches every context that has the attribute',
    ]);
    expect(warnings(validFlag())).toEqual([]);
  });

  it.each([
    // [operator, values it can never use, an attribute value of the operator's own type]
    ['in', [null], null],
    ['startsWith', [1, null, true], '1'],
    ['endsWith', [1, ['a']], 'a'],
    ['contains', [{ a: 1 }, 2], '2'],
    ['matches', ['(unclosed', 5], '(unclosed'],
    ['lessThan', ['5', null, [5]], 1],
    ['lessThanOrEqual', ['5'], '5'],
    ['greaterThan', ['0'], 1],
    ['greaterThanOrEqual', [true], 1],
    ['before', ['2024-01-01', 'tomorrow', null, true], '2000-01-01T00:00:00Z'],
    ['after', ['2024-01-01', '1700000000000'], 1800000000000],
    ['semVerEqual', ['v1.2.3', 'x', 123, null], '1.2.3'],
    ['semVerLessThan', ['v9.0.0', '1.2.3.4'], '1.0.0'],
    ['semVerGreaterThan', ['-1', '01.2.3'], '9.9.9'],
  ] as const)('%s with never-matching values %p evaluates as non-matching (negated: as LaunchDarkly, matching)', (op, values, attribute) => {
    const flag = (negate: boolean) =>
      validFlag({ prerequisites: [], targets: [], rules: [{ id: 'r', clauses: [{ attribute: 'a', op, values: [...values] as never, negate }], variationId: 'new' }] });
    expect(problems(flag(false))).toEqual([]);
    expect(warnings(flag(false)).length).toBeGreaterThan(0);
    const ctx = { key: 'u', a: attribute };
    expect(evaluateFlag(flag(false), ctx)).toMatchObject({ reason: 'FALLTHROUGH' });
    // A negated clause of never-matching values matches any context holding the attribute, and
    // still none without it (a null attribute counts as missing).
    expect(evaluateFlag(flag(true), ctx)).toMatchObject({ reason: attribute === null ? 'FALLTHROUGH' : 'RULE_MATCH' });
    expect(evaluateFlag(flag(true), { key: 'u' })).toMatchObject({ reason: 'FALLTHROUGH' });
  });

  it('refuses a regular expression the linear engine cannot run, or longer than MAX_REGEX_PATTERN_LENGTH', () => {
    const clause = (values: string[]) => ({ attribute: 'email', op: 'matches' as const, values });
    const flag = validFlag({
      prerequisites: [],
      rules: [
        {
          id: 'r',
          clauses: [
            clause(['(a)\\1', 'a(?=b)', '(?<!x)y', 'ok$']),
            clause(['x{5000}', 'y'.repeat(MAX_REGEX_PATTERN_LENGTH + 1), 'y'.repeat(MAX_REGEX_PATTERN_LENGTH)]),
            clause(['^(a+)+$', '(unclosed']),
          ],
          variationId: 'new',
        },
      ],
    });
    const linear = 'regular expression cannot be evaluated in linear time (backreferences, lookahead, lookbehind and counted repetitions over 1000 are not supported)';
    expect(problems(flag)).toEqual([
      `rules[0].clauses[0].values[0]: ${linear}`,
      `rules[0].clauses[0].values[1]: ${linear}`,
      `rules[0].clauses[0].values[2]: ${linear}`,
      `rules[0].clauses[1].values[0]: ${linear}`,
      `rules[0].clauses[1].values[1]: regular expression is longer than ${MAX_REGEX_PATTERN_LENGTH} characters`,
    ]);
    // `^(a+)+$` is linear for the RE2 automaton: accepted (and evaluated in linear time); an invalid
    // pattern stays a warning, as LaunchDarkly stores it.
    expect(warnings(flag)).toEqual([
      "rules[0].clauses[2].values[1]: is not a valid regular expression for 'matches': this value never matches",
    ]);
  });

  it('checks rollouts: not empty, known variations, sane weights, bucketBy, seed', () => {
    const rule = (rollout: unknown) => validFlag({ rules: [{ id: 'r', clauses: [], rollout: rollout as never }] });
    expect(problems(rule({ variations: [] }))).toEqual(['rules[0].rollout.variations: must not be empty']);
    expect(warnings(rule({ variations: [{ variationId: 'old', weight: 0 }, { variationId: 'new', weight: 0 }] }))).toEqual([
      'rules[0].rollout.variations: weights add up to 0: every context gets the last variation',
    ]);
    expect(
      problems(
        rule({
          variations: [
            { variationId: 'old', weight: 0 },
            { variationId: 'ghost', weight: -2 },
          ],
          bucketBy: '/',
          contextKind: 'user',
          seed: 1.5,
        }),
      ),
    ).toEqual([
      "rules[0].rollout.variations[1].variationId: names no variation of this flag ('ghost')",
      'rules[0].rollout.variations[1].weight: must be a finite number >= 0',
      'rules[0].rollout.bucketBy: must be an attribute reference: a name, `key`, or a /path (with contextKind the attribute is a reference)',
      'rules[0].rollout.seed: must be an integer',
    ]);
    expect(problems(rule('half'))).toEqual(['rules[0].rollout: must be an object']);
  });

  it('checks prerequisites on their own', () => {
    expect(
      problems(
        validFlag({
          prerequisites: [
            { key: 'checkout-v2', variationId: 'on' },
            { key: 'a', variationId: 'on' },
            { key: 'a', variationId: 'off' },
            { key: '', variationId: '' },
          ],
        }),
      ),
    ).toEqual([
      'prerequisites[0].key: a flag cannot be its own prerequisite',
      "prerequisites[2].key: duplicate prerequisite 'a'",
      'prerequisites[3].key: must be a non-empty string',
      'prerequisites[3].variationId: must be a non-empty string',
    ]);
  });

  it('checks prerequisites against the other flags when given a lookup', () => {
    const other = (key: string, prerequisites: FlagDefinition['prerequisites'] = []): FlagDefinition => ({
      ...validFlag({ key, prerequisites, type: 'boolean', defaultValue: false }),
      variations: [
        { id: 'on', name: 'On', value: true, weight: 0 },
        { id: 'off', name: 'Off', value: false, weight: 0 },
      ],
      targets: [],
      rules: [],
    });
    const flags = new Map<string, FlagDefinition>([
      ['payments', other('payments')],
      ['b', other('b', [{ key: 'c', variationId: 'on' }])],
      ['c', other('c', [{ key: 'checkout-v2', variationId: 'on' }])],
    ]);
    const lookup = (key: string) => flags.get(key);
    expect(problems(validFlag(), lookup)).toEqual([]);
    expect(
      problems(
        validFlag({
          prerequisites: [
            { key: 'payments', variationId: 'maybe' },
            { key: 'missing', variationId: 'on' },
            { key: 'b', variationId: 'on' },
          ],
        }),
        lookup,
      ),
    ).toEqual([
      "prerequisites[0].variationId: flag 'payments' has no variation 'maybe'",
      "prerequisites[1].key: no flag 'missing' in this environment",
      'prerequisites[2].key: prerequisite cycle: checkout-v2 -> b -> c -> checkout-v2',
    ]);
  });

  describe('bounds on prerequisites', () => {
    const flag = (key: string, prerequisites: string[]): FlagDefinition =>
      validFlag({ key, targets: [], rules: [], prerequisites: prerequisites.map((k) => ({ key: k, variationId: 'old' })) });
    /** A chain c0 -> c1 -> ... -> c{n}: c0 has n prerequisites below it. */
    const chain = (n: number) => new Map<string, FlagDefinition>(Array.from({ length: n + 1 }, (_, i) => [`c${i}`, flag(`c${i}`, i < n ? [`c${i + 1}`] : [])] as const));

    it(`refuses a chain deeper than MAX_PREREQUISITE_DEPTH (${MAX_PREREQUISITE_DEPTH}) below the flag`, () => {
      const flags = chain(MAX_PREREQUISITE_DEPTH);
      const lookup = (k: string) => flags.get(k);
      expect(problems(flag('top', ['c1']), lookup)).toEqual([]); // c1 is MAX - 1 deep: top is MAX deep
      expect(problems(flag('top', ['c0']), lookup)).toEqual([
        `prerequisites: its prerequisites lead through a chain of ${MAX_PREREQUISITE_DEPTH + 1} prerequisites (at most ${MAX_PREREQUISITE_DEPTH} deep)`,
      ]);
    });

    it(`refuses reaching more than MAX_PREREQUISITE_FLAGS (${MAX_PREREQUISITE_FLAGS}) flags, however shallow`, () => {
      const leaves = new Map<string, FlagDefinition>(Array.from({ length: MAX_PREREQUISITE_FLAGS + 1 }, (_, i) => [`leaf${i}`, flag(`leaf${i}`, [])] as const));
      leaves.set('mid', flag('mid', [...leaves.keys()].slice(3)));
      const lookup = (k: string) => leaves.get(k);
      expect(problems(flag('top', ['mid', 'leaf0']), lookup)).toEqual([]); // mid, leaf0 and 98 leaves under mid: 100
      expect(problems(flag('top', ['mid', 'leaf0', 'leaf1']), lookup)).toEqual([
        `prerequisites: its prerequisites reach more than ${MAX_PREREQUISITE_FLAGS} flags through prerequisites (at most ${MAX_PREREQUISITE_FLAGS})`,
      ]);
    });

    it('finds the flags above a change that it pushes beyond the bounds (a lookup cannot list them)', () => {
      const flags = chain(MAX_PREREQUISITE_DEPTH); // c0 is MAX deep
      flags.set('extra', flag('extra', []));
      expect(prerequisiteBoundProblems(flags, ['extra'])).toEqual([]);
      // The bottom flag gains a prerequisite: c0, far above it, is now one too deep.
      const bottom = `c${MAX_PREREQUISITE_DEPTH}`;
      flags.set(bottom, flag(bottom, ['extra']));
      expect(problems(flags.get(bottom)!, (k) => flags.get(k))).toEqual([]);
      expect(prerequisiteBoundProblems(flags, [bottom])).toEqual([
        { key: 'c0', message: `lead through a chain of ${MAX_PREREQUISITE_DEPTH + 1} prerequisites (at most ${MAX_PREREQUISITE_DEPTH} deep)` },
      ]);
      expect(prerequisiteBoundProblems(flags)).toEqual(prerequisiteBoundProblems(flags, [bottom]));
      expect(prerequisiteBoundProblems(flags, ['c0'])).toHaveLength(1);
      expect(prerequisiteBoundProblems(flags, ['unrelated'])).toEqual([]);
    });

    it('measures a diamond chain of depth 60 quickly and refuses it (2^60 paths, 121 flags)', () => {
      const flags = new Map<string, FlagDefinition>([['bottom', flag('bottom', [])]]);
      const level = (i: number) => (i === 60 ? ['bottom'] : [`l${i}a`, `l${i}b`]);
      for (let i = 59; i >= 0; i--) for (const k of level(i)) flags.set(k, flag(k, level(i + 1)));
      const found = prerequisiteBoundProblems(flags);
      expect(found.map((p) => p.key)).toContain('l0a');
      expect(found.find((p) => p.key === 'l0a')?.message).toMatch(/reach more than 100 flags/);
      expect(found.find((p) => p.key === `l${60 - MAX_PREREQUISITE_DEPTH - 1}a`)?.message).toMatch(/chain of 11 prerequisites/);
      expect(found.find((p) => p.key === `l${60 - MAX_PREREQUISITE_DEPTH}a`)).toBeUndefined();
    });
  });

  it('terminates on stored cycles that do not involve the flag', () => {
    const loop = (key: string, next: string): FlagDefinition => ({ ...validFlag({ key }), prerequisites: [{ key: next, variationId: 'old' }] });
    const flags = new Map([
      ['x', loop('x', 'y')],
      ['y', loop('y', 'x')],
    ]);
    expect(problems(validFlag({ prerequisites: [{ key: 'x', variationId: 'old' }] }), (k) => flags.get(k))).toEqual([]);
  });
});

describe('valueMatchesType', () => {
  it.each([
    ['boolean', true, true],
    ['boolean', 'true', false],
    ['boolean', 0, false],
    ['string', '', true],
    ['string', 1, false],
    ['number', 1.5, true],
    ['number', '1', false],
    ['number', Number.NaN, false],
    ['number', Number.POSITIVE_INFINITY, false],
    ['json', { a: [1, { b: null }] }, true],
    ['json', [1, 'x'], true],
    ['json', null, false],
    ['json', 'text', false],
    ['json', { a: undefined }, false],
    ['json', { d: new Date(0) }, false],
    ['json', { f: () => 1 }, false],
    ['colour', 'red', false],
  ] as const)('%s accepts %p: %p', (type, value, expected) => {
    expect(valueMatchesType(type as never, value)).toBe(expected);
  });

  it('refuses cyclic and absurdly deep values instead of overflowing the stack', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(valueMatchesType('json', cyclic)).toBe(false);
    let deep: unknown = 1;
    for (let i = 0; i < 10_000; i++) deep = [deep];
    expect(valueMatchesType('json', deep)).toBe(false);
  });
});

describe('checkSegmentDefinition', () => {
  const segment = { key: 'beta', name: 'Beta', included: ['u1'], excluded: [], includedContexts: [], excludedContexts: [], rules: [] };

  it('accepts a well-formed segment', () => {
    expect(checkSegmentDefinition({ ...segment, rules: [{ id: 'r1', clauses: [{ attribute: 'email', op: 'endsWith', values: ['@example.com'] }], weight: 50000 }] })).toEqual({ errors: [], warnings: [] });
  });

  it('names each problem by its path, unknown fields included', () => {
    const bad = { ...segment, bogus: 1, included: [''], includedContexts: [{ contextKind: '', values: ['o1'], extra: true }], rules: [{ id: 'r1', clauses: [], weight: 100001 }, { id: 'r1', clauses: 'x' }] };
    expect(checkSegmentDefinition(bad as never).errors.map((p) => p.path).sort()).toEqual(
      ['bogus', 'included[0]', 'includedContexts[0].contextKind', 'includedContexts[0].extra', 'rules[0].weight', 'rules[1].clauses', 'rules[1].id'].sort(),
    );
  });
});
