import { evaluateFlag, type FlagDefinition, type Rule, withLegacyReferenceKinds } from './index';

const flag = (rules: Rule[]): FlagDefinition => ({
  key: 'legacy',
  type: 'string',
  defaultValue: 'none',
  variations: [
    { id: 'a', name: 'a', value: 'a', weight: 0 },
    { id: 'b', name: 'b', value: 'b', weight: 0 },
  ],
  enabled: true,
  targets: [],
  rules,
  prerequisites: [],
});

describe('withLegacyReferenceKinds (data written when every /attribute was a reference)', () => {
  const old: Rule[] = [
    { id: 'nested', clauses: [{ attribute: '/address/city', op: 'in', values: ['Oslo'] }, { attribute: 'plan', op: 'in', values: ['pro'] }], variationId: 'a' },
    { id: 'split', clauses: [], rollout: { bucketBy: '/org/id', variations: [{ variationId: 'a', weight: 1 }, { variationId: 'b', weight: 1 }] } },
  ];

  it('gives /attributes and /bucketBy without a kind contextKind user, and leaves the rest as it is', () => {
    expect(withLegacyReferenceKinds(old)).toEqual([
      { id: 'nested', clauses: [{ attribute: '/address/city', contextKind: 'user', op: 'in', values: ['Oslo'] }, { attribute: 'plan', op: 'in', values: ['pro'] }], variationId: 'a' },
      { id: 'split', clauses: [], rollout: { bucketBy: '/org/id', contextKind: 'user', variations: [{ variationId: 'a', weight: 1 }, { variationId: 'b', weight: 1 }] } },
    ]);
    // Nothing to do: the very same array; not rules: returned as they are.
    const current: Rule[] = [{ id: 'r', clauses: [{ attribute: '/a', contextKind: 'user', op: 'in', values: [1] }, { attribute: 'b', op: 'in', values: [1] }], variationId: 'a' }];
    expect(withLegacyReferenceKinds(current)).toBe(current);
    expect(withLegacyReferenceKinds('nope')).toBe('nope');
    expect(withLegacyReferenceKinds([null, { clauses: 'x' }])).toEqual([null, { clauses: 'x' }]);
  });

  it('keeps what the rules meant: address.city is still read through the reference', () => {
    const ctx = { key: 'k', plan: 'pro', address: { city: 'Oslo' } };
    expect(evaluateFlag(flag(old), ctx).ruleId).toBe('split'); // read literally now: no attribute "/address/city"
    expect(evaluateFlag(flag(withLegacyReferenceKinds(old) as Rule[]), ctx)).toMatchObject({ value: 'a', ruleId: 'nested' });
  });
});
