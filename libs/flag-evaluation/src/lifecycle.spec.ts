import { servesOneValue } from './lifecycle';
import type { FlagDefinition } from './types';

const flag = (extra: Partial<FlagDefinition> = {}): FlagDefinition => ({
  key: 'k',
  type: 'string',
  defaultValue: 'd',
  variations: [
    { id: 'a', name: 'A', value: 'va', weight: 0 },
    { id: 'b', name: 'B', value: 'vb', weight: 0 },
  ],
  enabled: true,
  targets: [],
  rules: [],
  prerequisites: [],
  ...extra,
});

describe('servesOneValue', () => {
  it('an off flag serves its off value to everyone, whatever its targeting', () => {
    expect(servesOneValue(flag({ enabled: false, offValue: 'vb', targets: [{ variationId: 'a', values: ['u1'] }] }))).toEqual({ value: 'vb' });
    expect(servesOneValue(flag({ enabled: false }))).toEqual({ value: 'd' });
    expect(servesOneValue(flag({ enabled: false, type: 'boolean', defaultValue: true }))).toEqual({ value: false });
  });

  it('on with no weights serves the default; with one weighted variation, that one', () => {
    expect(servesOneValue(flag())).toEqual({ value: 'd' });
    expect(servesOneValue(flag({ variations: [{ id: 'a', name: 'A', value: 'va', weight: 0 }, { id: 'b', name: 'B', value: 'vb', weight: 100 }] }))).toEqual({ value: 'vb' });
  });

  it('on with a split fallthrough serves more than one', () => {
    expect(servesOneValue(flag({ variations: [{ id: 'a', name: 'A', value: 'va', weight: 1 }, { id: 'b', name: 'B', value: 'vb', weight: 99 }] }))).toBeUndefined();
  });

  it('targets, context targets, prerequisites or a rule with clauses may serve another value', () => {
    expect(servesOneValue(flag({ targets: [{ variationId: 'a', values: ['u1'] }] }))).toBeUndefined();
    expect(servesOneValue(flag({ contextTargets: [{ contextKind: 'org', variationId: 'a', values: ['o1'] }] }))).toBeUndefined();
    expect(servesOneValue(flag({ prerequisites: [{ key: 'p', variationId: 'x' }] }))).toBeUndefined();
    expect(servesOneValue(flag({ rules: [{ id: 'r', clauses: [{ attribute: 'country', op: 'in', values: ['NO'] }], variationId: 'a' }] }))).toBeUndefined();
  });

  it('a first rule without clauses decides for everyone: its variation, or its rollout with one weighted variation', () => {
    expect(servesOneValue(flag({ rules: [{ id: 'fallthrough', clauses: [], variationId: 'b' }] }))).toEqual({ value: 'vb' });
    const rollout = (weights: [number, number]) => ({ variations: [{ variationId: 'a', weight: weights[0] }, { variationId: 'b', weight: weights[1] }] });
    expect(servesOneValue(flag({ rules: [{ id: 'fallthrough', clauses: [], rollout: rollout([0, 100000]) }] }))).toEqual({ value: 'vb' });
    expect(servesOneValue(flag({ rules: [{ id: 'fallthrough', clauses: [], rollout: rollout([50000, 50000]) }] }))).toBeUndefined();
    // A rule naming no variation of the flag answers an error, not one value.
    expect(servesOneValue(flag({ rules: [{ id: 'r', clauses: [], variationId: 'gone' }] }))).toBeUndefined();
  });
});
