import { createHash } from 'node:crypto';

import {
  checkEvaluationContext,
  CompiledFlagSet,
  contextFromOpenFeature,
  contextKindsOf,
  evaluateFlag,
  type EvaluationContext,
  type FlagDefinition,
  MAX_CONTEXT_KINDS,
} from './index';

/** Contexts with kinds (LaunchDarkly's context model) through every part of a flag. */

const flag = (overrides: Partial<FlagDefinition> = {}): FlagDefinition => ({
  key: 'kinds',
  type: 'string',
  defaultValue: 'default',
  enabled: true,
  variations: ['a', 'b', 'c', 'd'].map((id) => ({ id, name: id, value: id, weight: 0 })),
  targets: [],
  rules: [],
  prerequisites: [],
  ...overrides,
});

const org = (key: string, extra: Record<string, unknown> = {}) => ({ kind: 'organization', key, ...extra });
const multi = (parts: Record<string, Record<string, unknown>>): EvaluationContext => ({ kind: 'multi', ...parts });

function bucket(input: string): number {
  return parseInt(createHash('sha1').update(input).digest('hex').slice(0, 15), 16) / 0xfffffffffffffff;
}

describe('checkEvaluationContext', () => {
  it.each<[string, unknown]>([
    ['a user without kind (key, targetingKey or userId)', { key: 'u' }],
    ['targetingKey', { targetingKey: 'u' }],
    ['userId', { userId: 'u' }],
    ['kind null is a user', { kind: null, key: 'u' }],
    ['a single kind', { kind: 'organization', key: 'o' }],
    ['kind with dots, dashes, underscores', { kind: 'my.org_kind-1', key: 'o' }],
    ['multi', { kind: 'multi', user: { key: 'u' }, organization: { key: 'o', name: 'Acme' } }],
  ])('accepts %s', (_, ctx) => {
    expect(checkEvaluationContext(ctx)).toBeUndefined();
  });

  it.each<[string, unknown, string]>([
    ['not an object', 'u', ''],
    ['no key', { name: 'x' }, 'key'],
    ['an empty key', { kind: 'user', key: '' }, 'key'],
    ['a number key', { kind: 'organization', key: 7 }, 'key'],
    ['an invalid kind', { kind: 'org anization', key: 'o' }, 'kind'],
    ["kind 'kind'", { kind: 'kind', key: 'o' }, 'kind'],
    ['a non-string kind', { kind: 3, key: 'o' }, 'kind'],
    ['an empty multi', { kind: 'multi' }, ''],
    ["'multi' inside multi", { kind: 'multi', multi: { key: 'x' } }, 'multi'],
    ['an invalid kind inside multi', { kind: 'multi', 'bad kind': { key: 'x' } }, 'bad kind'],
    ['a kind that is not an object', { kind: 'multi', user: 'u' }, 'user'],
    ['a missing key inside multi (no fallbacks there)', { kind: 'multi', user: { key: 'u' }, organization: { targetingKey: 'o' } }, 'organization.key'],
  ])('refuses %s, naming the field', (_, ctx, path) => {
    expect(checkEvaluationContext(ctx)?.path).toBe(path);
  });

  it(`bounds a multi-kind context at ${MAX_CONTEXT_KINDS} kinds`, () => {
    const parts = Object.fromEntries(Array.from({ length: MAX_CONTEXT_KINDS + 1 }, (_, i) => [`k${i}`, { key: 'x' }]));
    expect(checkEvaluationContext(multi(parts))?.message).toMatch(/at most 100 kinds/);
  });

  it('an invalid context evaluates to ERROR/USER_NOT_SPECIFIED, even when the flag is off', () => {
    for (const ctx of [{ kind: 'multi', multi: { key: 'x' } }, { kind: 'kind', key: 'o' }, { kind: 'multi', user: { key: '' } }]) {
      expect(evaluateFlag(flag({ enabled: false }), ctx)).toMatchObject({ reason: 'ERROR', errorKind: 'USER_NOT_SPECIFIED' });
    }
  });

  it('lists the kinds of a context', () => {
    expect(contextKindsOf({ key: 'u' })).toEqual(['user']);
    expect(contextKindsOf(org('o'))).toEqual(['organization']);
    expect(contextKindsOf(multi({ user: { key: 'u' }, device: { key: 'd' } }))).toEqual(['user', 'device']);
  });
});

describe('contextFromOpenFeature (the mapping of LaunchDarkly’s OpenFeature providers)', () => {
  it('targetingKey is the key, attributes stay, no kind is a user', () => {
    expect(contextFromOpenFeature({ targetingKey: 'u', email: 'a@b' })).toEqual({ kind: 'user', key: 'u', email: 'a@b' });
  });
  it('kind selects the kind', () => {
    expect(contextFromOpenFeature({ kind: 'organization', targetingKey: 'o', plan: 'pro' })).toEqual({ kind: 'organization', key: 'o', plan: 'pro' });
  });
  it('kind multi nests one object per kind, each with its targetingKey or key', () => {
    expect(contextFromOpenFeature({ kind: 'multi', user: { targetingKey: 'u', age: 3 }, organization: { key: 'o' }, stray: 1 })).toEqual({
      kind: 'multi',
      user: { kind: 'user', key: 'u', age: 3 },
      organization: { kind: 'organization', key: 'o' },
    });
  });
  it('what it cannot map is left for checkEvaluationContext to name', () => {
    expect(checkEvaluationContext(contextFromOpenFeature({ kind: 'multi', user: { name: 'no key' } }))?.path).toBe('user.key');
  });
});

describe('clauses with context kinds', () => {
  const rule = (clause: Record<string, unknown>) => flag({ rules: [{ id: 'r', clauses: [clause as never], variationId: 'b' }] });

  it('a clause of a kind reads the context of that kind; a context without it never matches, negated or not', () => {
    const onPlan = rule({ contextKind: 'organization', attribute: 'plan', op: 'in', values: ['pro'] });
    const negated = rule({ contextKind: 'organization', attribute: 'plan', op: 'in', values: ['pro'], negate: true });
    expect(evaluateFlag(onPlan, org('o', { plan: 'pro' })).value).toBe('b');
    expect(evaluateFlag(onPlan, { key: 'u', plan: 'pro' }).value).toBe('default');
    expect(evaluateFlag(negated, { key: 'u', plan: 'free' }).value).toBe('default');
    expect(evaluateFlag(negated, org('o', { plan: 'free' })).value).toBe('b');
    expect(evaluateFlag(onPlan, multi({ user: { key: 'u', plan: 'free' }, organization: { key: 'o', plan: 'pro' } })).value).toBe('b');
    expect(evaluateFlag(onPlan, multi({ user: { key: 'u', plan: 'pro' }, device: { key: 'd', plan: 'pro' } })).value).toBe('default');
  });

  it('a clause without contextKind is about the user: an organization context does not have it', () => {
    const f = rule({ attribute: 'plan', op: 'in', values: ['pro'] });
    expect(evaluateFlag(f, { key: 'u', plan: 'pro' }).value).toBe('b');
    expect(evaluateFlag(f, org('o', { plan: 'pro' })).value).toBe('default');
    expect(evaluateFlag(f, multi({ user: { key: 'u', plan: 'pro' } })).value).toBe('b');
  });

  it('key is the key of the clause’s kind', () => {
    const f = rule({ contextKind: 'organization', attribute: 'key', op: 'in', values: ['acme'] });
    expect(evaluateFlag(f, multi({ user: { key: 'acme' }, organization: { key: 'acme' } })).value).toBe('b');
    expect(evaluateFlag(f, multi({ user: { key: 'acme' }, organization: { key: 'globex' } })).value).toBe('default');
  });

  it('the built-in kind matches any of the context’s kinds, whatever the clause’s contextKind; negate applies', () => {
    const isOrg = rule({ attribute: 'kind', op: 'in', values: ['organization'] });
    const isOrgOfDevice = rule({ contextKind: 'device', attribute: 'kind', op: 'in', values: ['organization'] });
    const notOrg = rule({ attribute: 'kind', op: 'in', values: ['organization'], negate: true });
    const startsWithU = rule({ attribute: 'kind', op: 'startsWith', values: ['u'] });
    expect(evaluateFlag(isOrg, org('o')).value).toBe('b');
    expect(evaluateFlag(isOrg, { key: 'u', kind: 'user' }).value).toBe('default');
    expect(evaluateFlag(isOrgOfDevice, org('o')).value).toBe('b');
    expect(evaluateFlag(isOrg, multi({ user: { key: 'u' }, organization: { key: 'o' } })).value).toBe('b');
    expect(evaluateFlag(notOrg, { key: 'u' }).value).toBe('b');
    expect(evaluateFlag(notOrg, multi({ user: { key: 'u' }, organization: { key: 'o' } })).value).toBe('default');
    // A context without kind is a user, as far as `kind` is concerned too.
    expect(evaluateFlag(startsWithU, { key: 'u' }).value).toBe('b');
  });

  it('anonymous is always a boolean for a kind the context has (LaunchDarkly reads !!anonymous)', () => {
    const notAnonymous = rule({ attribute: 'anonymous', op: 'in', values: [false] });
    expect(evaluateFlag(notAnonymous, { key: 'u' }).value).toBe('b');
    expect(evaluateFlag(notAnonymous, { key: 'u', anonymous: true }).value).toBe('default');
    expect(evaluateFlag(rule({ contextKind: 'device', attribute: 'anonymous', op: 'in', values: [false] }), { key: 'u' }).value).toBe('default');
  });

  it('attribute references read nested objects of the clause’s kind; ~1 and ~0 escape', () => {
    const city = rule({ contextKind: 'organization', attribute: '/address/city', op: 'in', values: ['Oslo'] });
    const escaped = rule({ contextKind: 'organization', attribute: '/a~1b/c~0d', op: 'in', values: ['x'] });
    expect(evaluateFlag(city, multi({ user: { key: 'u', address: { city: 'Oslo' } }, organization: { key: 'o', address: { city: 'Oslo' } } })).value).toBe('b');
    expect(evaluateFlag(city, multi({ user: { key: 'u', address: { city: 'Oslo' } }, organization: { key: 'o', address: { city: 'Lyon' } } })).value).toBe('default');
    expect(evaluateFlag(escaped, org('o', { 'a/b': { 'c~d': 'x' } })).value).toBe('b');
  });

  it('an invalid reference is MALFORMED_FLAG whether or not the context has the kind (LaunchDarkly checks it first)', () => {
    for (const attribute of ['/a//b', 'a~', '/_meta/x']) {
      const f = rule({ contextKind: 'organization', attribute, op: 'in', values: ['x'] });
      expect(evaluateFlag(f, { key: 'u' }).errorKind).toBe('MALFORMED_FLAG');
      expect(evaluateFlag(f, org('o')).errorKind).toBe('MALFORMED_FLAG');
    }
  });
});

describe('targets by kind', () => {
  it('targets without contextKind are user keys: an organization with that key is not targeted', () => {
    const f = flag({ targets: [{ variationId: 'b', values: ['k'] }] });
    expect(evaluateFlag(f, { key: 'k' })).toMatchObject({ value: 'b', reason: 'TARGET_MATCH' });
    expect(evaluateFlag(f, org('k')).reason).toBe('FALLTHROUGH');
    expect(evaluateFlag(f, multi({ organization: { key: 'k' }, user: { key: 'k' } })).value).toBe('b');
  });

  it('targets with a contextKind target that kind, first one wins', () => {
    const f = flag({ targets: [{ variationId: 'b', values: ['k'], contextKind: 'organization' }, { variationId: 'c', values: ['k'] }] });
    expect(evaluateFlag(f, org('k')).value).toBe('b');
    expect(evaluateFlag(f, { key: 'k' }).value).toBe('c');
    // Both kinds listed: the earlier target wins, as LaunchDarkly scans in order.
    expect(evaluateFlag(f, multi({ user: { key: 'k' }, organization: { key: 'k' } })).value).toBe('b');
  });

  it('contextTargets replace targets in the order; a user entry stands for the targets entry of its variation', () => {
    const f = flag({
      targets: [
        { variationId: 'c', values: ['u1'] },
        { variationId: 'd', values: ['u2'] },
      ],
      contextTargets: [
        { contextKind: 'organization', variationId: 'b', values: ['o1'] },
        { contextKind: 'user', variationId: 'd', values: ['ignored'] },
        { contextKind: 'device', variationId: 'a', values: ['d1'] },
      ],
    });
    expect(evaluateFlag(f, org('o1')).value).toBe('b');
    expect(evaluateFlag(f, { key: 'u2' }).value).toBe('d');
    // u1's variation has no user entry in contextTargets: LaunchDarkly never reaches that target.
    expect(evaluateFlag(f, { key: 'u1' }).reason).toBe('FALLTHROUGH');
    expect(evaluateFlag(f, { key: 'ignored' }).reason).toBe('FALLTHROUGH');
    expect(evaluateFlag(f, multi({ device: { key: 'd1' }, user: { key: 'u2' } })).value).toBe('d');
    expect(evaluateFlag(f, multi({ device: { key: 'd1' }, user: { key: 'u2' }, organization: { key: 'o1' } })).value).toBe('b');
  });
});

describe('rollouts by kind', () => {
  const split = [
    { variationId: 'a', weight: 0 },
    { variationId: 'b', weight: 50_000 },
    { variationId: 'c', weight: 50_000 },
  ];
  const byOrg = flag({ salt: 's', rules: [{ id: 'r', clauses: [], rollout: { contextKind: 'organization', variations: split } }] });

  it('buckets by the key of the rollout’s kind, as LaunchDarkly hashes it', () => {
    for (let i = 0; i < 30; i++) {
      const expected = bucket(`kinds.s.org-${i}`) < 0.5 ? 'b' : 'c';
      expect(evaluateFlag(byOrg, org(`org-${i}`)).value).toBe(expected);
      // The same organization gets the same bucket whoever the user is.
      expect(evaluateFlag(byOrg, multi({ user: { key: `user-${i}` }, organization: { key: `org-${i}` } })).value).toBe(expected);
    }
  });

  it('a context without the kind takes bucket 0: the first slice with weight', () => {
    expect(evaluateFlag(byOrg, { key: 'u' })).toMatchObject({ value: 'b', reason: 'RULE_MATCH', inRollout: true });
  });

  it('bucketBy of a kind is a reference into that kind’s context', () => {
    const f = flag({ salt: 's', rules: [{ id: 'r', clauses: [], rollout: { contextKind: 'organization', bucketBy: '/billing/id', variations: split } }] });
    for (let i = 0; i < 20; i++) {
      const expected = bucket(`kinds.s.b${i}`) < 0.5 ? 'b' : 'c';
      expect(evaluateFlag(f, multi({ user: { key: 'u', billing: { id: 'zz' } }, organization: { key: 'o', billing: { id: `b${i}` } } })).value).toBe(expected);
    }
  });
});

describe('existing answers keep', () => {
  it('a context without kind is evaluated exactly as before, through a compiled set', () => {
    const set = CompiledFlagSet.compile([flag({ targets: [{ variationId: 'b', values: ['t'] }], rules: [{ id: 'r', clauses: [{ attribute: 'plan', op: 'in', values: ['pro'] }], variationId: 'c' }] })]);
    expect(set.evaluate('kinds', { userId: 't' })?.value).toBe('b');
    expect(set.evaluate('kinds', { targetingKey: 'x', plan: 'pro' })?.value).toBe('c');
    expect(set.evaluate('kinds', { key: 'x', kind: 'user', plan: 'free' })?.reason).toBe('FALLTHROUGH');
  });
});
