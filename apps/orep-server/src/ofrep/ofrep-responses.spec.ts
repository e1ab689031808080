import { CompiledFlagSet, type FlagDefinition } from '@flagship/flag-evaluation';
import { evaluationError, OfrepResponses, ofrepReason } from './ofrep-responses';

const onOff = [
  { id: 'on', name: 'On', value: true, weight: 1 },
  { id: 'off', name: 'Off', value: false, weight: 0 },
];
const base: FlagDefinition = { key: 'f', type: 'boolean', defaultValue: false, variations: onOff, enabled: true, targets: [], rules: [], prerequisites: [] };
const set = CompiledFlagSet.compile([
  { ...base, key: 'off', enabled: false },
  { ...base, key: 'target', targets: [{ variationId: 'on', values: ['u'] }] },
  { ...base, key: 'rule', rules: [{ id: 'r1', clauses: [], variationId: 'off' }], version: 3 },
  { ...base, key: 'rule-rollout', rules: [{ id: 'r2', clauses: [], rollout: { variations: [{ variationId: 'on', weight: 1 }] } }] },
  { ...base, key: 'split' },
  { ...base, key: 'default', variations: onOff.map((v) => ({ ...v, weight: 0 })) },
  { ...base, key: 'prereq', prerequisites: [{ key: 'off', variationId: 'on' }] },
  { ...base, key: 'broken', rules: [{ id: 'r3', clauses: [], variationId: 'nope' }] },
]);
const evaluate = (key: string, ctx: Record<string, unknown> = { targetingKey: 'u' }) => {
  const flag = set.get(key)!;
  return { flag, result: set.evaluate(key, ctx)! };
};

describe('OpenFeature reasons', () => {
  it.each([
    ['off', 'DISABLED'],
    ['target', 'TARGETING_MATCH'],
    ['rule', 'TARGETING_MATCH'],
    ['rule-rollout', 'SPLIT'],
    ['split', 'SPLIT'],
    ['default', 'DEFAULT'],
    ['prereq', 'PREREQUISITE_FAILED'],
    ['broken', 'ERROR'],
  ])('%s -> %s', (key, reason) => {
    expect(ofrepReason(evaluate(key).result)).toBe(reason);
  });
});

describe('OfrepResponses', () => {
  const responses = new OfrepResponses();

  it('writes {key, value, reason, variant, metadata}, leaving out what there is not', () => {
    const rule = evaluate('rule');
    expect(JSON.parse(responses.success(rule.flag, rule.result))).toEqual({
      key: 'rule',
      value: false,
      reason: 'TARGETING_MATCH',
      variant: 'off',
      metadata: { version: 3, ruleId: 'r1', ruleIndex: 0 },
    });
    const fallthrough = evaluate('default');
    expect(JSON.parse(responses.success(fallthrough.flag, fallthrough.result))).toEqual({ key: 'default', value: false, reason: 'DEFAULT' });
    const prereq = evaluate('prereq');
    expect(JSON.parse(responses.success(prereq.flag, prereq.result)).metadata).toEqual({ prerequisiteKey: 'off' });
  });

  it('serialises each result once: the same result gives the same string instance', () => {
    const a = evaluate('target');
    const b = evaluate('target');
    expect(b.result).toBe(a.result);
    expect(responses.success(b.flag, b.result)).toBe(responses.success(a.flag, a.result));
  });

  it('bulk items carry OpenFeature error codes for results that are errors', () => {
    const broken = evaluate('broken');
    expect(JSON.parse(responses.bulkItem(broken.flag, broken.result))).toEqual({
      key: 'broken',
      errorCode: 'GENERAL',
      errorDetails: "flag 'broken' cannot be evaluated: its configuration is malformed",
    });
    const noKey = evaluate('target', {});
    expect(evaluationError(noKey.flag, noKey.result).code).toBe('TARGETING_KEY_MISSING');
    expect(JSON.parse(responses.bulkItem(noKey.flag, noKey.result)).errorCode).toBe('TARGETING_KEY_MISSING');
  });
});
