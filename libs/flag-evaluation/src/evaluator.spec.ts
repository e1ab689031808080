import { createHash } from 'node:crypto';

import {
  CompiledFlagSet,
  compileFlag,
  evaluateFlag,
  type EvaluationResult,
  type FlagDefinition,
  MAX_EVALUATION_STEPS,
  onEvaluationOverBudget,
  type Rule,
  type Variation,
} from './index';
import { stepsLeft } from './budget';

function expectedBucket(hashInput: string): number {
  const hex = createHash('sha1').update(hashInput, 'utf8').digest('hex');
  return parseInt(hex.slice(0, 15), 16) / Number('0xFFFFFFFFFFFFFFF');
}

const boolVariations = (): Variation[] => [
  { id: 'on', name: 'On', value: true, weight: 0 },
  { id: 'off', name: 'Off', value: false, weight: 0 },
];

function boolFlag(overrides: Partial<FlagDefinition> = {}): FlagDefinition {
  return {
    key: 'flag',
    type: 'boolean',
    defaultValue: false,
    enabled: true,
    variations: boolVariations(),
    targets: [],
    rules: [],
    prerequisites: [],
    ...overrides,
  };
}

function stringFlag(overrides: Partial<FlagDefinition> = {}): FlagDefinition {
  return {
    key: 'colour',
    type: 'string',
    defaultValue: 'grey',
    enabled: true,
    variations: [
      { id: 'red', name: 'Red', value: 'red', weight: 0 },
      { id: 'green', name: 'Green', value: 'green', weight: 0 },
      { id: 'blue', name: 'Blue', value: 'blue', weight: 0 },
    ],
    targets: [],
    rules: [],
    prerequisites: [],
    ...overrides,
  };
}

const countryRule = (id: string, countries: string[], variationId: string): Rule => ({
  id,
  clauses: [{ attribute: 'country', op: 'in', values: countries }],
  variationId,
});

describe('reasons', () => {
  it('OFF serves false for a boolean flag without offValue', () => {
    expect(evaluateFlag(boolFlag({ enabled: false, defaultValue: true }), { key: 'u' })).toEqual({
      value: false,
      enabled: false,
      reason: 'OFF',
      variationId: 'off',
    });
  });

  it('OFF serves defaultValue for other types without offValue, and offValue when set', () => {
    expect(evaluateFlag(stringFlag({ enabled: false }), { key: 'u' })).toEqual({ value: 'grey', enabled: false, reason: 'OFF' });
    expect(evaluateFlag(stringFlag({ enabled: false, offValue: 'blue' }), { key: 'u' })).toEqual({
      value: 'blue',
      enabled: false,
      reason: 'OFF',
      variationId: 'blue',
    });
  });

  it('OFF wins over targets and rules', () => {
    const flag = stringFlag({
      enabled: false,
      targets: [{ variationId: 'red', values: ['u'] }],
      rules: [{ id: 'all', clauses: [], variationId: 'green' }],
    });
    expect(evaluateFlag(flag, { key: 'u' }).reason).toBe('OFF');
  });

  it('TARGET_MATCH serves the target variation', () => {
    const flag = stringFlag({ targets: [{ variationId: 'green', values: ['a', 'b'] }] });
    expect(evaluateFlag(flag, { key: 'b' })).toEqual({ value: 'green', enabled: true, reason: 'TARGET_MATCH', variationId: 'green' });
    expect(evaluateFlag(flag, { key: 'c' }).reason).toBe('FALLTHROUGH');
  });

  it('RULE_MATCH carries ruleId and ruleIndex', () => {
    const flag = stringFlag({ rules: [countryRule('r-fr', ['FR'], 'red'), countryRule('r-de', ['DE'], 'blue')] });
    expect(evaluateFlag(flag, { key: 'u', country: 'DE' })).toEqual({
      value: 'blue',
      enabled: true,
      reason: 'RULE_MATCH',
      variationId: 'blue',
      ruleId: 'r-de',
      ruleIndex: 1,
    });
  });

  it("LaunchDarkly's imported fallthrough (a last rule `fallthrough` without clauses) answers FALLTHROUGH, not RULE_MATCH", () => {
    const imported = stringFlag({ rules: [countryRule('r-fr', ['FR'], 'red'), { id: 'fallthrough', clauses: [], variationId: 'blue' }] });
    expect(evaluateFlag(imported, { key: 'u', country: 'DE' })).toEqual({ value: 'blue', enabled: true, reason: 'FALLTHROUGH', variationId: 'blue' });
    expect(evaluateFlag(imported, { key: 'u', country: 'FR' })).toMatchObject({ reason: 'RULE_MATCH', ruleId: 'r-fr' });
    // Only as the last rule and without clauses: anywhere else it is an ordinary rule.
    const notLast = stringFlag({ rules: [{ id: 'fallthrough', clauses: [], variationId: 'blue' }, countryRule('r-fr', ['FR'], 'red')] });
    expect(evaluateFlag(notLast, { key: 'u' })).toMatchObject({ reason: 'RULE_MATCH', ruleId: 'fallthrough', ruleIndex: 0 });
    const withClauses = stringFlag({ rules: [{ ...countryRule('fallthrough', ['DE'], 'blue') }] });
    expect(evaluateFlag(withClauses, { key: 'u', country: 'DE' })).toMatchObject({ reason: 'RULE_MATCH', ruleId: 'fallthrough' });
  });

  it('FALLTHROUGH serves defaultValue without a variationId when no weight is positive', () => {
    expect(evaluateFlag(stringFlag(), { key: 'u' })).toEqual({ value: 'grey', enabled: true, reason: 'FALLTHROUGH' });
  });

  it('FALLTHROUGH rolls out over the variations weights when any is positive', () => {
    const flag = stringFlag({
      variations: [
        { id: 'red', name: 'Red', value: 'red', weight: 0 },
        { id: 'green', name: 'Green', value: 'green', weight: 5 },
        { id: 'blue', name: 'Blue', value: 'blue', weight: 0 },
      ],
    });
    for (const key of ['a', 'b', 'c', 'd']) {
      expect(evaluateFlag(flag, { key })).toEqual({
        value: 'green',
        enabled: true,
        reason: 'FALLTHROUGH',
        variationId: 'green',
        inRollout: true,
      });
    }
  });

  it('ERROR USER_NOT_SPECIFIED serves defaultValue, even for an off flag (LaunchDarkly checks the context first)', () => {
    for (const ctx of [{}, { key: '' }, { key: 5 }, { targetingKey: null }, { name: 'no key' }]) {
      expect(evaluateFlag(stringFlag(), ctx)).toEqual({
        value: 'grey',
        enabled: true,
        reason: 'ERROR',
        errorKind: 'USER_NOT_SPECIFIED',
      });
    }
    expect(evaluateFlag(stringFlag({ enabled: false }), {})).toMatchObject({ enabled: false, errorKind: 'USER_NOT_SPECIFIED' });
    for (const bad of [null, undefined, 'key', 42]) {
      expect(evaluateFlag(stringFlag(), bad as unknown as Record<string, unknown>).errorKind).toBe('USER_NOT_SPECIFIED');
    }
  });
});

describe('context key', () => {
  const flag = stringFlag({
    targets: [
      { variationId: 'red', values: ['k'] },
      { variationId: 'green', values: ['t'] },
      { variationId: 'blue', values: ['u'] },
    ],
  });

  it('is key, else targetingKey, else userId: the first non-empty string', () => {
    expect(evaluateFlag(flag, { key: 'k', targetingKey: 't', userId: 'u' }).value).toBe('red');
    expect(evaluateFlag(flag, { targetingKey: 't', userId: 'u' }).value).toBe('green');
    expect(evaluateFlag(flag, { userId: 'u' }).value).toBe('blue');
    expect(evaluateFlag(flag, { key: '', targetingKey: 't' }).value).toBe('green');
    expect(evaluateFlag(flag, { key: 7, userId: 'u' }).value).toBe('blue');
  });
});

describe('targets', () => {
  it('uses the first target listing a key', () => {
    const flag = stringFlag({
      targets: [
        { variationId: 'red', values: ['x', 'dup'] },
        { variationId: 'green', values: ['dup'] },
      ],
    });
    expect(evaluateFlag(flag, { key: 'dup' }).value).toBe('red');
  });

  it('win over rules', () => {
    const flag = stringFlag({
      targets: [{ variationId: 'red', values: ['u'] }],
      rules: [{ id: 'all', clauses: [], variationId: 'green' }],
    });
    expect(evaluateFlag(flag, { key: 'u' }).reason).toBe('TARGET_MATCH');
    expect(evaluateFlag(flag, { key: 'v' }).reason).toBe('RULE_MATCH');
  });

  it('compare the context key exactly', () => {
    const flag = stringFlag({ targets: [{ variationId: 'red', values: ['User'] }] });
    expect(evaluateFlag(flag, { key: 'user' }).reason).toBe('FALLTHROUGH');
  });

  it('naming no variation are malformed only for the keys they list', () => {
    const flag = stringFlag({ targets: [{ variationId: 'purple', values: ['u'] }] });
    expect(evaluateFlag(flag, { key: 'u' })).toEqual({ value: 'grey', enabled: true, reason: 'ERROR', errorKind: 'MALFORMED_FLAG' });
    expect(evaluateFlag(flag, { key: 'v' }).reason).toBe('FALLTHROUGH');
  });
});

describe('rules', () => {
  it('are tried in order; the first match wins', () => {
    const flag = stringFlag({
      rules: [countryRule('first', ['FR'], 'red'), countryRule('second', ['FR', 'DE'], 'green'), { id: 'all', clauses: [], variationId: 'blue' }],
    });
    expect(evaluateFlag(flag, { key: 'u', country: 'FR' })).toMatchObject({ value: 'red', ruleId: 'first', ruleIndex: 0 });
    expect(evaluateFlag(flag, { key: 'u', country: 'DE' })).toMatchObject({ value: 'green', ruleId: 'second', ruleIndex: 1 });
    expect(evaluateFlag(flag, { key: 'u', country: 'US' })).toMatchObject({ value: 'blue', ruleId: 'all', ruleIndex: 2 });
  });

  it('need every clause to match', () => {
    const flag = stringFlag({
      rules: [
        {
          id: 'both',
          clauses: [
            { attribute: 'country', op: 'in', values: ['FR'] },
            { attribute: 'plan', op: 'in', values: ['premium'] },
          ],
          variationId: 'red',
        },
      ],
    });
    expect(evaluateFlag(flag, { key: 'u', country: 'FR', plan: 'premium' }).reason).toBe('RULE_MATCH');
    expect(evaluateFlag(flag, { key: 'u', country: 'FR', plan: 'free' }).reason).toBe('FALLTHROUGH');
    expect(evaluateFlag(flag, { key: 'u', country: 'FR' }).reason).toBe('FALLTHROUGH');
  });

  it('with no clauses match every context', () => {
    expect(evaluateFlag(stringFlag({ rules: [{ id: 'all', clauses: [], variationId: 'red' }] }), { key: 'u' }).value).toBe('red');
  });

  it('naming no variation make the flag malformed only when they match', () => {
    const flag = stringFlag({ rules: [countryRule('bad', ['FR'], 'purple')] });
    expect(evaluateFlag(flag, { key: 'u', country: 'FR' })).toEqual({
      value: 'grey',
      enabled: true,
      reason: 'ERROR',
      errorKind: 'MALFORMED_FLAG',
    });
    expect(evaluateFlag(flag, { key: 'u', country: 'DE' }).reason).toBe('FALLTHROUGH');
  });

  it('with neither variationId nor rollout, or an empty rollout, are malformed when they match', () => {
    const neither = stringFlag({ rules: [{ id: 'n', clauses: [] }] });
    expect(evaluateFlag(neither, { key: 'u' }).errorKind).toBe('MALFORMED_FLAG');
    const empty = stringFlag({ rules: [{ id: 'e', clauses: [], rollout: { variations: [] } }] });
    expect(evaluateFlag(empty, { key: 'u' }).errorKind).toBe('MALFORMED_FLAG');
  });

  it('with both variationId and rollout serve the variationId (LaunchDarkly precedence)', () => {
    const flag = stringFlag({
      rules: [{ id: 'b', clauses: [], variationId: 'red', rollout: { variations: [{ variationId: 'blue', weight: 1 }] } }],
    });
    expect(evaluateFlag(flag, { key: 'u' })).toMatchObject({ value: 'red', reason: 'RULE_MATCH' });
  });
});

describe('rollouts', () => {
  const rolloutFlag = (rollout: Rule['rollout'], overrides: Partial<FlagDefinition> = {}): FlagDefinition =>
    stringFlag({ key: 'roll', rules: [{ id: 'split', clauses: [], rollout }], ...overrides });

  it('split relative weights 1 and 3 about 25/75 over 10k keys, exactly as the independent hash says', () => {
    const set = CompiledFlagSet.compile([
      rolloutFlag({
        variations: [
          { variationId: 'red', weight: 1 },
          { variationId: 'green', weight: 3 },
        ],
      }),
    ]);
    let red = 0;
    for (let i = 0; i < 10_000; i++) {
      const key = `user-${i}`;
      const result = set.evaluate('roll', { key }) as EvaluationResult;
      const expected = expectedBucket(`roll.roll.${key}`) * 4 < 1 ? 'red' : 'green';
      expect(result.variationId).toBe(expected);
      expect(result).toMatchObject({ reason: 'RULE_MATCH', ruleId: 'split', ruleIndex: 0, inRollout: true });
      if (result.value === 'red') red++;
    }
    expect(red / 10_000).toBeGreaterThan(0.23);
    expect(red / 10_000).toBeLessThan(0.27);
  });

  it('choose by bucket * total < cumulative weight (check vectors at the boundary)', () => {
    // hashKey/saltyA buckets: userKeyA 0.42157587, userKeyB 0.6708485, userKeyC 0.10343106.
    const at = (firstWeight: number) =>
      compileFlag(
        rolloutFlag(
          {
            variations: [
              { variationId: 'red', weight: firstWeight },
              { variationId: 'green', weight: 100_000 - firstWeight },
            ],
          },
          { key: 'hashKey', salt: 'saltyA' },
        ),
      );
    expect(at(42_157).evaluate({ key: 'userKeyA' }).value).toBe('green');
    expect(at(42_158).evaluate({ key: 'userKeyA' }).value).toBe('red');
    expect(at(67_084).evaluate({ key: 'userKeyB' }).value).toBe('green');
    expect(at(67_085).evaluate({ key: 'userKeyB' }).value).toBe('red');
    expect(at(10_343).evaluate({ key: 'userKeyC' }).value).toBe('green');
    expect(at(10_344).evaluate({ key: 'userKeyC' }).value).toBe('red');
  });

  it('hash an absent salt as the flag key and an empty one as it is (LaunchDarkly hashes a flag without salt as `{key}..{value}`)', () => {
    const slice = (extra: object) => {
      // A 50/50 split: which half each user lands in tells the hash input apart.
      const flag = compileFlag(rolloutFlag({ variations: [{ variationId: 'red', weight: 1 }, { variationId: 'green', weight: 1 }] }, { key: 'hashKey', ...extra }));
      return Array.from({ length: 40 }, (_, i) => flag.evaluate({ key: `user-${i}` }).value).join(',');
    };
    const expected = (hashPrefix: string) => Array.from({ length: 40 }, (_, i) => (expectedBucket(`${hashPrefix}user-${i}`) < 0.5 ? 'red' : 'green')).join(',');
    expect(slice({})).toBe(expected('hashKey.hashKey.'));
    expect(slice({ salt: '' })).toBe(expected('hashKey..'));
    expect(slice({ salt: '' })).not.toBe(slice({}));
  });

  it('hash {seed}.{value} when a seed is set (contract check vectors)', () => {
    const seeded = (firstWeight: number) =>
      compileFlag(
        rolloutFlag(
          {
            seed: 61,
            variations: [
              { variationId: 'red', weight: firstWeight },
              { variationId: 'green', weight: 100_000 - firstWeight },
            ],
          },
          { key: 'hashKey', salt: 'saltyA' },
        ),
      );
    // userKeyA 0.09801207, userKeyB 0.14483777, userKeyC 0.9242641 with seed 61.
    expect(seeded(9_801).evaluate({ key: 'userKeyA' }).value).toBe('green');
    expect(seeded(9_802).evaluate({ key: 'userKeyA' }).value).toBe('red');
    expect(seeded(14_483).evaluate({ key: 'userKeyB' }).value).toBe('green');
    expect(seeded(14_484).evaluate({ key: 'userKeyB' }).value).toBe('red');
    expect(seeded(92_426).evaluate({ key: 'userKeyC' }).value).toBe('green');
    expect(seeded(92_427).evaluate({ key: 'userKeyC' }).value).toBe('red');
  });

  it('treat seed 0 as no seed, and default the salt to the flag key', () => {
    const variations = [
      { variationId: 'red', weight: 1 },
      { variationId: 'green', weight: 1 },
      { variationId: 'blue', weight: 1 },
    ];
    const plain = compileFlag(rolloutFlag({ variations }));
    const seedZero = compileFlag(rolloutFlag({ variations, seed: 0 }));
    const saltIsKey = compileFlag(rolloutFlag({ variations }, { salt: 'roll' }));
    const otherSalt = compileFlag(rolloutFlag({ variations }, { salt: 'pepper' }));
    let differences = 0;
    for (let i = 0; i < 300; i++) {
      const ctx = { key: `k${i}` };
      const v = plain.evaluate(ctx).value;
      expect(seedZero.evaluate(ctx).value).toBe(v);
      expect(saltIsKey.evaluate(ctx).value).toBe(v);
      const slot = Math.floor(expectedBucket(`roll.roll.k${i}`) * 3);
      expect(v).toBe(['red', 'green', 'blue'][slot]);
      if (otherSalt.evaluate(ctx).value !== v) differences++;
    }
    expect(differences).toBeGreaterThan(100); // another salt reshuffles about 2/3 of the keys
  });

  it('bucket by another attribute with bucketBy, integers as decimal strings', () => {
    const flag = compileFlag(
      rolloutFlag({
        bucketBy: 'org',
        variations: [
          { variationId: 'red', weight: 1 },
          { variationId: 'green', weight: 1 },
        ],
      }),
    );
    for (let i = 0; i < 200; i++) {
      const org = `org-${i}`;
      const expected = expectedBucket(`roll.roll.${org}`) < 0.5 ? 'red' : 'green';
      // Every member of an org gets the same variation, whatever their own key.
      expect(flag.evaluate({ key: `a${i}`, org }).value).toBe(expected);
      expect(flag.evaluate({ key: `b${i}`, org }).value).toBe(expected);
    }
    expect(flag.evaluate({ key: 'x', org: 42 }).value).toBe(expectedBucket('roll.roll.42') < 0.5 ? 'red' : 'green');
  });

  it('bucketBy without a contextKind is a literal name, with one a reference (LaunchDarkly); absent or empty, the key', () => {
    const split = [
      { variationId: 'red', weight: 1 },
      { variationId: 'green', weight: 1 },
    ];
    const pick = (input: string) => (expectedBucket(`roll.roll.${input}`) < 0.5 ? 'red' : 'green');
    const literal = compileFlag(rolloutFlag({ bucketBy: '/org/id', variations: split }));
    const reference = compileFlag(rolloutFlag({ bucketBy: '/org/id', contextKind: 'user', variations: split }));
    const otherKind = compileFlag(rolloutFlag({ bucketBy: 'org', contextKind: 'organization', variations: [{ variationId: 'red', weight: 0 }, ...split] }));
    const emptyBucketBy = compileFlag(rolloutFlag({ bucketBy: '', variations: split }));
    // Inputs whose two candidate buckets land in different slices, so a wrong reading shows.
    let checked = 0;
    for (let i = 0; i < 40; i++) {
      const nested = `n${i}`;
      const flat = `f${i}`;
      if (pick(nested) === pick(flat)) continue;
      checked++;
      const ctx = { key: `k${i}`, org: { id: nested }, '/org/id': flat };
      expect(literal.evaluate(ctx).value).toBe(pick(flat));
      expect(reference.evaluate(ctx).value).toBe(pick(nested));
      // Another kind's attribute is missing: bucket 0, the first slice with weight.
      expect(otherKind.evaluate({ key: `k${i}`, org: nested }).value).toBe('red');
      expect(emptyBucketBy.evaluate(ctx).value).toBe(pick(`k${i}`));
    }
    expect(checked).toBeGreaterThan(10);
  });

  it('put contexts without a bucketable value in bucket 0 (the first slice with weight)', () => {
    const flag = compileFlag(
      rolloutFlag({
        bucketBy: 'org',
        variations: [
          { variationId: 'red', weight: 0 },
          { variationId: 'green', weight: 1 },
          { variationId: 'blue', weight: 1 },
        ],
      }),
    );
    for (const org of [undefined, null, 1.5, true, { id: 1 }]) {
      expect(flag.evaluate({ key: 'someone', org }).value).toBe('green');
    }
  });

  it('use the last slice when the weights add up to 0 (LaunchDarkly)', () => {
    const flag = rolloutFlag({
      variations: [
        { variationId: 'red', weight: 0 },
        { variationId: 'blue', weight: 0 },
      ],
    });
    expect(evaluateFlag(flag, { key: 'u' }).value).toBe('blue');
  });

  it('are malformed when the chosen slice names no variation', () => {
    const flag = rolloutFlag({ variations: [{ variationId: 'purple', weight: 1 }] });
    expect(evaluateFlag(flag, { key: 'u' })).toMatchObject({ reason: 'ERROR', errorKind: 'MALFORMED_FLAG' });
  });

  it('through the fallthrough use the flag key and salt and the variations weights', () => {
    const flag = compileFlag(
      stringFlag({
        key: 'ft',
        salt: 'NaCl',
        variations: [
          { id: 'red', name: 'Red', value: 'red', weight: 1 },
          { id: 'green', name: 'Green', value: 'green', weight: 3 },
        ],
      }),
    );
    for (let i = 0; i < 500; i++) {
      const expected = expectedBucket(`ft.NaCl.k${i}`) * 4 < 1 ? 'red' : 'green';
      expect(flag.evaluate({ key: `k${i}` })).toMatchObject({ value: expected, reason: 'FALLTHROUGH', inRollout: true });
    }
  });
});

describe('prerequisites', () => {
  const prereq = (overrides: Partial<FlagDefinition> = {}): FlagDefinition =>
    boolFlag({
      key: 'prereq',
      rules: [{ id: 'opted', clauses: [{ attribute: 'opted', op: 'in', values: [true] }], variationId: 'on' }],
      ...overrides,
    });
  const dependent = (overrides: Partial<FlagDefinition> = {}): FlagDefinition =>
    stringFlag({
      key: 'dependent',
      offValue: 'red',
      prerequisites: [{ key: 'prereq', variationId: 'on' }],
      rules: [{ id: 'all', clauses: [], variationId: 'green' }],
      ...overrides,
    });

  it('let the evaluation continue when the prerequisite serves the named variation', () => {
    const set = CompiledFlagSet.compile([prereq(), dependent()]);
    expect(set.evaluate('dependent', { key: 'u', opted: true })).toMatchObject({ value: 'green', reason: 'RULE_MATCH' });
  });

  it('fail with the off value when the prerequisite serves another variation', () => {
    const set = CompiledFlagSet.compile([prereq(), dependent()]);
    expect(set.evaluate('dependent', { key: 'u', opted: false })).toEqual({
      value: 'red',
      enabled: true,
      reason: 'PREREQUISITE_FAILED',
      variationId: 'red',
      prerequisiteKey: 'prereq',
    });
  });

  it('fail when the prerequisite is off, even if its off value is the named variation', () => {
    const set = CompiledFlagSet.compile([prereq({ enabled: false, offValue: true }), dependent()]);
    expect(set.evaluate('dependent', { key: 'u', opted: true })).toMatchObject({
      reason: 'PREREQUISITE_FAILED',
      prerequisiteKey: 'prereq',
    });
  });

  it('fail when the prerequisite flag does not exist, or when compiled alone', () => {
    expect(CompiledFlagSet.compile([dependent()]).evaluate('dependent', { key: 'u' })).toMatchObject({
      reason: 'PREREQUISITE_FAILED',
      prerequisiteKey: 'prereq',
    });
    expect(compileFlag(dependent()).evaluate({ key: 'u', opted: true }).reason).toBe('PREREQUISITE_FAILED');
  });

  it('come before targets and rules', () => {
    const set = CompiledFlagSet.compile([prereq(), dependent({ targets: [{ variationId: 'blue', values: ['vip'] }] })]);
    expect(set.evaluate('dependent', { key: 'vip', opted: false })?.reason).toBe('PREREQUISITE_FAILED');
    expect(set.evaluate('dependent', { key: 'vip', opted: true })?.reason).toBe('TARGET_MATCH');
  });

  it('are checked in order and report the first failure', () => {
    const set = CompiledFlagSet.compile([
      prereq({ key: 'p1' }),
      prereq({ key: 'p2', rules: [{ id: 'r', clauses: [{ attribute: 'two', op: 'in', values: [true] }], variationId: 'on' }] }),
      dependent({
        prerequisites: [
          { key: 'p1', variationId: 'on' },
          { key: 'p2', variationId: 'on' },
        ],
      }),
    ]);
    expect(set.evaluate('dependent', { key: 'u', opted: true, two: true })?.reason).toBe('RULE_MATCH');
    expect(set.evaluate('dependent', { key: 'u', opted: true, two: false })?.prerequisiteKey).toBe('p2');
    expect(set.evaluate('dependent', { key: 'u', opted: false, two: false })?.prerequisiteKey).toBe('p1');
  });

  it('apply transitively, reporting the direct prerequisite', () => {
    const set = CompiledFlagSet.compile([
      prereq({ key: 'base' }),
      boolFlag({ key: 'middle', prerequisites: [{ key: 'base', variationId: 'on' }], rules: [{ id: 'all', clauses: [], variationId: 'on' }] }),
      dependent({ prerequisites: [{ key: 'middle', variationId: 'on' }] }),
    ]);
    expect(set.evaluate('dependent', { key: 'u', opted: true })?.reason).toBe('RULE_MATCH');
    expect(set.evaluate('dependent', { key: 'u', opted: false })).toMatchObject({
      reason: 'PREREQUISITE_FAILED',
      prerequisiteKey: 'middle',
    });
  });

  it('shared by two prerequisites (a diamond) are no cycle', () => {
    const set = CompiledFlagSet.compile([
      prereq({ key: 'base' }),
      boolFlag({ key: 'left', prerequisites: [{ key: 'base', variationId: 'on' }], rules: [{ id: 'a', clauses: [], variationId: 'on' }] }),
      dependent({
        prerequisites: [
          { key: 'base', variationId: 'on' },
          { key: 'left', variationId: 'on' },
        ],
      }),
    ]);
    expect(set.evaluate('dependent', { key: 'u', opted: true })?.reason).toBe('RULE_MATCH');
  });

  it('in a cycle make the flag malformed, serving defaultValue', () => {
    const set = CompiledFlagSet.compile([
      boolFlag({ key: 'a', prerequisites: [{ key: 'b', variationId: 'on' }] }),
      boolFlag({ key: 'b', prerequisites: [{ key: 'a', variationId: 'on' }] }),
      boolFlag({ key: 'self', defaultValue: true, prerequisites: [{ key: 'self', variationId: 'on' }] }),
    ]);
    expect(set.evaluate('a', { key: 'u' })).toEqual({
      value: false,
      enabled: true,
      reason: 'ERROR',
      errorKind: 'MALFORMED_FLAG',
      prerequisiteKey: 'b',
    });
    expect(set.evaluate('self', { key: 'u' })).toMatchObject({ value: true, errorKind: 'MALFORMED_FLAG' });
    // The cycle detection leaves no state behind: the same answer again.
    expect(set.evaluate('a', { key: 'u' })?.errorKind).toBe('MALFORMED_FLAG');
  });

  it('in a cycle that an off flag cuts are no error', () => {
    const set = CompiledFlagSet.compile([
      boolFlag({ key: 'a', prerequisites: [{ key: 'b', variationId: 'on' }] }),
      boolFlag({ key: 'b', enabled: false, prerequisites: [{ key: 'a', variationId: 'on' }] }),
    ]);
    expect(set.evaluate('a', { key: 'u' })).toMatchObject({ reason: 'PREREQUISITE_FAILED', prerequisiteKey: 'b' });
  });

  it('that are malformed make the dependent flag malformed', () => {
    const set = CompiledFlagSet.compile([
      boolFlag({ key: 'prereq', rules: [{ id: 'bad', clauses: [], variationId: 'nope' }] }),
      dependent(),
    ]);
    expect(set.evaluate('dependent', { key: 'u' })).toMatchObject({
      value: 'grey',
      reason: 'ERROR',
      errorKind: 'MALFORMED_FLAG',
      prerequisiteKey: 'prereq',
    });
  });

  it('resolve through evaluateFlag lookup, cycles included', () => {
    const flags = new Map<string, FlagDefinition>([
      ['prereq', prereq()],
      ['a', boolFlag({ key: 'a', prerequisites: [{ key: 'b', variationId: 'on' }] })],
      ['b', boolFlag({ key: 'b', prerequisites: [{ key: 'a', variationId: 'on' }] })],
    ]);
    const lookup = (key: string) => flags.get(key);
    expect(evaluateFlag(dependent(), { key: 'u', opted: true }, lookup).value).toBe('green');
    expect(evaluateFlag(dependent(), { key: 'u', opted: false }, lookup).reason).toBe('PREREQUISITE_FAILED');
    expect(evaluateFlag(flags.get('a')!, { key: 'u' }, lookup).errorKind).toBe('MALFORMED_FLAG');
  });
});

/** Levels 0..depth-1 of two flags each, each requiring both flags of the next level; one flag at the bottom. */
function diamondChain(depth: number, bottomOn = true): FlagDefinition[] {
  const flags: FlagDefinition[] = [boolFlag({ key: 'bottom', enabled: bottomOn, rules: [{ id: 'all', clauses: [], variationId: 'on' }] })];
  const level = (i: number) => (i === depth ? ['bottom'] : [`l${i}a`, `l${i}b`]);
  for (let i = depth - 1; i >= 0; i--) {
    for (const key of level(i)) {
      flags.push(
        boolFlag({
          key,
          prerequisites: level(i + 1).map((k) => ({ key: k, variationId: 'on' })),
          rules: [{ id: 'r', clauses: [{ attribute: 'plan', op: 'in', values: ['pro'] }], variationId: 'on' }, { id: 'all', clauses: [], variationId: 'on' }],
        }),
      );
    }
  }
  return flags;
}

describe('cost of one evaluation', () => {

  it('memoises prerequisites within one evaluation: a diamond chain of depth 60 costs its 121 flags, not 2^60 paths', () => {
    const set = CompiledFlagSet.compile(diamondChain(60));
    expect(set.evaluate('l0a', { key: 'u' })).toMatchObject({ reason: 'RULE_MATCH', ruleId: 'all', value: true });
    // Linear: about 5 steps per flag (a prerequisite, two rules and a clause), far from the budget.
    const used = MAX_EVALUATION_STEPS - stepsLeft();
    expect(used).toBeLessThan(121 * 8);
    // The bottom flag off fails every level, the same for every evaluation (memos do not leak across them).
    const off = CompiledFlagSet.compile(diamondChain(60, false));
    expect(off.evaluate('l0a', { key: 'u' })).toMatchObject({ reason: 'PREREQUISITE_FAILED', prerequisiteKey: 'l1a' });
    expect(set.evaluate('l0a', { key: 'u', plan: 'pro' })).toMatchObject({ reason: 'RULE_MATCH', ruleId: 'r' });
    expect(off.evaluate('l59b', { key: 'u' })).toMatchObject({ reason: 'PREREQUISITE_FAILED', prerequisiteKey: 'bottom' });
  });

  it('answers ERROR/MALFORMED_FLAG (the default value) when one evaluation runs out of steps, and tells the listener', () => {
    const seen: string[] = [];
    const stop = onEvaluationOverBudget((key) => seen.push(key));
    const never = (i: number): Rule => ({ id: `r${i}`, clauses: [{ attribute: 'country', op: 'in', values: ['nowhere'] }], variationId: 'on' });
    const huge = compileFlag(boolFlag({ key: 'huge', defaultValue: true, rules: Array.from({ length: MAX_EVALUATION_STEPS }, (_, i) => never(i)) }));
    expect(huge.evaluate({ key: 'u', country: 'FR' })).toEqual({ value: true, enabled: true, reason: 'ERROR', errorKind: 'MALFORMED_FLAG' });
    expect(seen).toEqual(['huge']);
    // 1,000 rules (more than LaunchDarkly data has) are well within the budget.
    const large = compileFlag(boolFlag({ key: 'large', rules: Array.from({ length: 1000 }, (_, i) => never(i)) }));
    expect(large.evaluate({ key: 'u', country: 'FR' }).reason).toBe('FALLTHROUGH');
    expect(seen).toEqual(['huge']);
    stop();
    huge.evaluate({ key: 'u', country: 'FR' });
    expect(seen).toEqual(['huge']);
  });

  it('counts attribute array elements and regex input: a 100,000-element array is cut short', () => {
    const flag = compileFlag(boolFlag({ key: 'arrays', rules: [{ id: 'r', clauses: [{ attribute: 'tags', op: 'matches', values: ['^(a+)+$', 'b+$'] }], variationId: 'on' }] }));
    const tags = Array.from({ length: 100_000 }, () => 'a'.repeat(500) + '!');
    const started = process.hrtime.bigint();
    expect(flag.evaluate({ key: 'u', tags })).toMatchObject({ reason: 'ERROR', errorKind: 'MALFORMED_FLAG' });
    expect(Number(process.hrtime.bigint() - started) / 1e6).toBeLessThan(1000); // a backstop; the step count is the bound
    expect(flag.evaluate({ key: 'u', tags: ['x', 'ab'] })).toMatchObject({ reason: 'RULE_MATCH' });
  });
});

describe('bad data never throws', () => {
  it.each([
    ['variations not an array', { variations: 'x' }],
    ['a variation without id', { variations: [{ name: 'x', value: 'a', weight: 0 }] }],
    ['a variation value that is not JSON', { variations: [{ id: 'x', name: 'x', value: undefined, weight: 0 }] }],
    ['rules not an array', { rules: {} }],
    ['a null rule', { rules: [null] }],
    ['a clause without values', { rules: [{ id: 'r', clauses: [{ attribute: 'a', op: 'in' }], variationId: 'red' }] }],
    ['a null target', { targets: [null] }],
    ['a prerequisite without key', { prerequisites: [{ variationId: 'on' }] }],
    ['defaultValue missing', { defaultValue: undefined }],
    ['a cyclic defaultValue', { defaultValue: (() => { const o: Record<string, unknown> = {}; o.self = o; return o; })() }],
  ])('%s: ERROR MALFORMED_FLAG', (_, overrides) => {
    const flag = { ...stringFlag(), ...(overrides as object) } as FlagDefinition;
    expect(() => compileFlag(flag)).not.toThrow();
    expect(evaluateFlag(flag, { key: 'u' })).toMatchObject({ reason: 'ERROR', errorKind: 'MALFORMED_FLAG' });
  });

  it('copes with flags that are not objects and sets that are not arrays', () => {
    expect(evaluateFlag(null as unknown as FlagDefinition, { key: 'u' })).toMatchObject({ reason: 'ERROR', value: null });
    expect(CompiledFlagSet.compile(null as unknown as FlagDefinition[]).size).toBe(0);
  });

  it('ignores an unknown type (offValue then defaults to defaultValue)', () => {
    const flag = { ...stringFlag({ enabled: false }), type: 'colour' } as unknown as FlagDefinition;
    expect(evaluateFlag(flag, { key: 'u' })).toMatchObject({ value: 'grey', reason: 'OFF' });
  });

  it('copes with odd contexts', () => {
    const flag = stringFlag({ rules: [countryRule('r', ['FR'], 'red')] });
    const cyclic: Record<string, unknown> = { key: 'u' };
    cyclic.country = cyclic;
    expect(evaluateFlag(flag, cyclic).reason).toBe('FALLTHROUGH');
    expect(evaluateFlag(flag, Object.assign(Object.create(null) as object, { key: 'u', country: 'FR' })).reason).toBe('RULE_MATCH');
  });
});

describe('results and compiled flags', () => {
  it('are frozen, values included, and shared between calls', () => {
    const flag = compileFlag({
      ...stringFlag(),
      type: 'json',
      defaultValue: {},
      variations: [{ id: 'cfg', name: 'cfg', value: { limits: [1, 2] }, weight: 1 }],
    });
    const a = flag.evaluate({ key: 'u' });
    const b = flag.evaluate({ key: 'v' });
    expect(a).toBe(b);
    expect(Object.isFrozen(a)).toBe(true);
    expect(Object.isFrozen(a.value)).toBe(true);
    expect(() => {
      ((a.value as { limits: number[] }).limits as number[]).push(3);
    }).toThrow(TypeError);
    expect(flag.evaluate({ key: 'w' }).value).toEqual({ limits: [1, 2] });
  });

  it('leave the definition untouched', () => {
    const definition = stringFlag({ rules: [countryRule('r', ['FR'], 'red')] });
    const before = JSON.stringify(definition);
    compileFlag(definition).evaluate({ key: 'u', country: 'FR' });
    expect(JSON.stringify(definition)).toBe(before);
    expect(Object.isFrozen(definition.variations[0])).toBe(false);
  });

  it('expose key, type, enabled and version', () => {
    const flag = compileFlag(stringFlag({ version: 7 }));
    expect([flag.key, flag.type, flag.enabled, flag.version]).toEqual(['colour', 'string', true, 7]);
  });

  it('CompiledFlagSet finds flags by key, later duplicates winning', () => {
    const set = CompiledFlagSet.compile([stringFlag({ defaultValue: 'first' }), boolFlag(), stringFlag({ defaultValue: 'second' })]);
    expect(set.size).toBe(2);
    expect([...set.keys()].sort()).toEqual(['colour', 'flag']);
    expect(set.get('flag')?.type).toBe('boolean');
    expect(set.get('nope')).toBeUndefined();
    expect(set.evaluate('nope', { key: 'u' })).toBeUndefined();
    expect(set.evaluate('colour', { key: 'u' })?.value).toBe('second');
  });

  it('evaluate a plain Map of compiled flags as prerequisites', () => {
    const p = compileFlag(boolFlag({ key: 'p', rules: [{ id: 'all', clauses: [], variationId: 'on' }] }));
    const d = compileFlag(stringFlag({ prerequisites: [{ key: 'p', variationId: 'on' }], rules: [{ id: 'x', clauses: [], variationId: 'blue' }] }));
    expect(d.evaluate({ key: 'u' }, new Map([['p', p]])).value).toBe('blue');
  });
});
