import { createHash } from 'node:crypto';

import { stepsLeft } from './budget';
import {
  checkSegmentDefinition,
  CompiledFlagSet,
  evaluateFlag,
  type FlagDefinition,
  MAX_EVALUATION_STEPS,
  MAX_SEGMENT_DEPTH,
  type SegmentDefinition,
  validateFlagDefinition,
} from './index';

/** Segments with LaunchDarkly's semantics, through the segmentMatch operator. */

const segment = (key: string, overrides: Partial<SegmentDefinition> = {}): SegmentDefinition => ({
  key,
  name: key,
  included: [],
  excluded: [],
  includedContexts: [],
  excludedContexts: [],
  rules: [],
  ...overrides,
});

const inSegments = (keys: string[], negate = false): FlagDefinition => ({
  key: 'gated',
  type: 'boolean',
  defaultValue: false,
  enabled: true,
  variations: [true, false].map((value) => ({ id: value ? 'on' : 'off', name: String(value), value, weight: 0 })),
  targets: [],
  rules: [{ id: 'seg', clauses: [{ attribute: 'key', op: 'segmentMatch', values: keys, negate }], variationId: 'on' }],
  prerequisites: [],
});

function bucket(input: string): number {
  return parseInt(createHash('sha1').update(input).digest('hex').slice(0, 15), 16) / 0xfffffffffffffff;
}

const evaluate = (segments: SegmentDefinition[], ctx: Record<string, unknown>, flag = inSegments(['s'])) =>
  CompiledFlagSet.compile([flag], segments).evaluate(flag.key, ctx)!;

describe('segmentMatch', () => {
  it('included user keys and included keys of other kinds match; included wins over excluded', () => {
    const s = segment('s', { included: ['u1'], excluded: ['u1', 'u2'], includedContexts: [{ contextKind: 'organization', values: ['o1'] }] });
    expect(evaluate([s], { key: 'u1' })).toMatchObject({ value: true, reason: 'RULE_MATCH', ruleId: 'seg' });
    expect(evaluate([s], { kind: 'organization', key: 'o1' }).value).toBe(true);
    // An organization keyed like an included user is not that user.
    expect(evaluate([s], { kind: 'organization', key: 'u1' }).value).toBe(false);
    expect(evaluate([s], { kind: 'multi', user: { key: 'x' }, organization: { key: 'o1' } }).value).toBe(true);
  });

  it('excluded keys (per kind) win over rules', () => {
    const everyone = [{ id: 'all', clauses: [] }];
    const s = segment('s', { excluded: ['u2'], excludedContexts: [{ contextKind: 'organization', values: ['o2'] }], rules: everyone });
    expect(evaluate([s], { key: 'u1' }).value).toBe(true);
    expect(evaluate([s], { key: 'u2' }).value).toBe(false);
    expect(evaluate([s], { kind: 'multi', user: { key: 'u1' }, organization: { key: 'o2' } }).value).toBe(false);
  });

  it('rules: every clause matches; a rule without clauses matches everyone', () => {
    const s = segment('s', { rules: [{ id: 'r', clauses: [{ attribute: 'plan', op: 'in', values: ['pro'] }, { contextKind: 'organization', attribute: 'size', op: 'greaterThan', values: [100] }] }] });
    expect(evaluate([s], { kind: 'multi', user: { key: 'u', plan: 'pro' }, organization: { key: 'o', size: 500 } }).value).toBe(true);
    expect(evaluate([s], { kind: 'multi', user: { key: 'u', plan: 'pro' }, organization: { key: 'o', size: 5 } }).value).toBe(false);
    expect(evaluate([s], { key: 'u', plan: 'pro' }).value).toBe(false);
  });

  it('a weighted rule matches below weight/100000 of the segment’s bucket (salt: the segment’s, default its key), else the next rule', () => {
    const salted = segment('s', { salt: 'pepper', rules: [{ id: 'half', clauses: [], weight: 50_000 }] });
    const unsalted = segment('s', { rules: [{ id: 'half', clauses: [], weight: 50_000 }] });
    const byOrg = segment('s', { salt: '', rules: [{ id: 'half', clauses: [], weight: 50_000, rolloutContextKind: 'organization', bucketBy: '/billing/id' }] });
    const fallback = segment('s', { rules: [{ id: 'none', clauses: [], weight: 0 }, { id: 'vip', clauses: [{ attribute: 'vip', op: 'in', values: [true] }] }] });
    let inside = 0;
    for (let i = 0; i < 40; i++) {
      const key = `user-${i}`;
      expect(evaluate([salted], { key }).value).toBe(bucket(`s.pepper.${key}`) < 0.5);
      expect(evaluate([unsalted], { key }).value).toBe(bucket(`s.s.${key}`) < 0.5);
      const ctx = { kind: 'multi', user: { key }, organization: { key: 'o', billing: { id: `b${i}` } } };
      expect(evaluate([byOrg], ctx).value).toBe(bucket(`s..b${i}`) < 0.5);
      if (bucket(`s.pepper.${key}`) < 0.5) inside++;
    }
    expect(inside).toBeGreaterThan(5);
    expect(inside).toBeLessThan(35);
    // Without the rollout's kind, bucket 0: inside any positive weight.
    expect(evaluate([byOrg], { key: 'u' }).value).toBe(true);
    expect(evaluate([fallback], { key: 'u', vip: true }).value).toBe(true);
    expect(evaluate([fallback], { key: 'u' }).value).toBe(false);
  });

  it('any named segment matches; an unknown one does not; negate applies', () => {
    const a = segment('a', { included: ['u1'] });
    const b = segment('b', { included: ['u2'] });
    expect(evaluate([a, b], { key: 'u2' }, inSegments(['missing', 'a', 'b'])).value).toBe(true);
    expect(evaluate([a, b], { key: 'u3' }, inSegments(['missing', 'a', 'b'])).value).toBe(false);
    expect(evaluate([a, b], { key: 'u3' }, inSegments(['a'], true)).value).toBe(true);
    expect(evaluate([], { key: 'u3' }, inSegments(['a'], true)).value).toBe(true);
  });

  it('nests: a segment’s rule may match another segment', () => {
    const inner = segment('inner', { includedContexts: [{ contextKind: 'device', values: ['d1'] }] });
    const outer = segment('s', { rules: [{ id: 'r', clauses: [{ attribute: '', op: 'segmentMatch', values: ['inner'] }] }] });
    expect(evaluate([inner, outer], { kind: 'device', key: 'd1' }).value).toBe(true);
    expect(evaluate([inner, outer], { kind: 'device', key: 'd2' }).value).toBe(false);
  });

  it('a cycle is MALFORMED_FLAG, as LaunchDarkly answers it; so is nesting beyond MAX_SEGMENT_DEPTH', () => {
    const a = segment('s', { rules: [{ id: 'r', clauses: [{ attribute: 'key', op: 'segmentMatch', values: ['b'] }] }] });
    const b = segment('b', { rules: [{ id: 'r', clauses: [{ attribute: 'key', op: 'segmentMatch', values: ['s'] }] }] });
    expect(evaluate([a, b], { key: 'u' })).toMatchObject({ reason: 'ERROR', errorKind: 'MALFORMED_FLAG' });
    // Included keys are read before the rules: a context included by `s` never reaches the cycle.
    expect(evaluate([{ ...a, included: ['in'] }, b], { key: 'in' }).value).toBe(true);

    const chain = (n: number) =>
      Array.from({ length: n }, (_, i) =>
        segment(i === 0 ? 's' : `s${i}`, i === n - 1 ? { rules: [{ id: 'all', clauses: [] }] } : { rules: [{ id: 'r', clauses: [{ attribute: 'key', op: 'segmentMatch', values: [`s${i + 1}`] }] }] }),
      );
    expect(evaluate(chain(MAX_SEGMENT_DEPTH), { key: 'u' }).value).toBe(true);
    expect(evaluate(chain(MAX_SEGMENT_DEPTH + 1), { key: 'u' }).errorKind).toBe('MALFORMED_FLAG');
  });

  it('is memoised within an evaluation: a diamond of segments costs each segment once', () => {
    // 20 levels of two segments, each naming both segments of the next level: 2^20 paths.
    const segments: SegmentDefinition[] = [];
    const levels = 20;
    for (let level = 0; level < levels; level++) {
      for (const side of ['l', 'r']) {
        const next = level + 1 < levels ? [`${level + 1}l`, `${level + 1}r`] : [];
        segments.push(segment(`${level}${side}`, { rules: next.length ? [{ id: 'r', clauses: [{ attribute: 'key', op: 'segmentMatch', values: next }, { attribute: 'never', op: 'in', values: ['x'] }] }] : [] }));
      }
    }
    const set = CompiledFlagSet.compile([inSegments(['0l', '0r'])], segments);
    // Deeper than MAX_SEGMENT_DEPTH: malformed, but reached without walking the 2^20 paths.
    const started = process.hrtime.bigint();
    expect(set.evaluate('gated', { key: 'u' })?.errorKind).toBe('MALFORMED_FLAG');
    expect(Number(process.hrtime.bigint() - started) / 1e6).toBeLessThan(200);
    const shallow = CompiledFlagSet.compile([inSegments(['10l', '10r'])], segments);
    expect(shallow.evaluate('gated', { key: 'u' })?.value).toBe(false);
    expect(MAX_EVALUATION_STEPS - stepsLeft()).toBeLessThan(200);
  });

  it('10,000 included keys are a set lookup', () => {
    const keys = Array.from({ length: 10_000 }, (_, i) => `member-${i}`);
    const set = CompiledFlagSet.compile([inSegments(['s'])], [segment('s', { included: keys, includedContexts: [{ contextKind: 'organization', values: keys }] })]);
    expect(set.evaluate('gated', { key: 'member-9999' })?.value).toBe(true);
    expect(set.evaluate('gated', { kind: 'organization', key: 'member-5000' })?.value).toBe(true);
    expect(set.evaluate('gated', { key: 'stranger' })?.value).toBe(false);
    expect(MAX_EVALUATION_STEPS - stepsLeft()).toBeLessThan(10);
  });

  it('no shape of segment or multi-kind context exceeds the step budget', () => {
    const manyRules = segment('s', { rules: Array.from({ length: 5_000 }, (_, i) => ({ id: `r${i}`, clauses: [{ attribute: 'tags', op: 'in', values: ['never'] }, { attribute: 'x', op: 'in', values: ['y'] }] })) });
    const tags = Array.from({ length: 50 }, (_, i) => `t${i}`);
    expect(evaluate([manyRules], { key: 'u', tags })).toMatchObject({ reason: 'ERROR', errorKind: 'MALFORMED_FLAG' });
    expect(stepsLeft()).toBeLessThan(0);
    const kinds = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, { key: 'x' }]));
    const wide = segment('s', { includedContexts: Array.from({ length: 100 }, (_, i) => ({ contextKind: `c${i}`, values: ['x'] })) });
    expect(evaluate([wide], { kind: 'multi', ...kinds }).value).toBe(false);
    expect(MAX_EVALUATION_STEPS - stepsLeft()).toBeLessThan(MAX_EVALUATION_STEPS);
  });

  it('evaluateFlag finds segments through segmentLookup, and a malformed segment makes the flag malformed', () => {
    const segments = new Map([['s', segment('s', { included: ['u'] })], ['bad', { key: 'bad', rules: 'x' } as unknown as SegmentDefinition]]);
    expect(evaluateFlag(inSegments(['s']), { key: 'u' }, undefined, (k) => segments.get(k)).value).toBe(true);
    expect(evaluateFlag(inSegments(['s']), { key: 'u' }).value).toBe(false);
    expect(evaluateFlag(inSegments(['bad']), { key: 'u' }, undefined, (k) => segments.get(k)).errorKind).toBe('MALFORMED_FLAG');
  });
});

describe('segments at write', () => {
  const lookupOf = (...segments: SegmentDefinition[]) => {
    const byKey = new Map(segments.map((s) => [s.key, s]));
    return (k: string) => byKey.get(k);
  };
  const nested = (key: string, target: string) => segment(key, { rules: [{ id: 'r', clauses: [{ attribute: 'key', op: 'segmentMatch', values: [target] }] }] });

  it('a flag’s segmentMatch values are segment keys, known when the segments are given', () => {
    const flag = inSegments(['s', 'nope']);
    (flag.rules[0]!.clauses[0]!.values as unknown[]).push(3);
    expect(validateFlagDefinition(flag)).toEqual([{ path: 'rules[0].clauses[0].values[2]', message: 'must be a segment key' }]);
    expect(validateFlagDefinition(flag, undefined, lookupOf(segment('s')))).toEqual([
      { path: 'rules[0].clauses[0].values[1]', message: "no segment 'nope' in this environment" },
      { path: 'rules[0].clauses[0].values[2]', message: 'must be a segment key' },
    ]);
  });

  it('refuses a segment cycle, naming it, and nesting deeper than MAX_SEGMENT_DEPTH', () => {
    const b = nested('b', 'c');
    const c = nested('c', 'a');
    expect(checkSegmentDefinition(nested('a', 'b'), lookupOf(b, c)).errors).toEqual([{ path: 'rules', message: 'segmentMatch cycle: a -> b -> c -> a' }]);
    expect(checkSegmentDefinition(nested('a', 'a'), lookupOf()).errors).toEqual([
      { path: 'rules[0].clauses[0].values[0]', message: "no segment 'a' in this environment" },
      { path: 'rules', message: 'segmentMatch cycle: a -> a' },
    ]);
    const chain = Array.from({ length: MAX_SEGMENT_DEPTH }, (_, i) => (i === MAX_SEGMENT_DEPTH - 1 ? segment(`s${i}`) : nested(`s${i}`, `s${i + 1}`)));
    expect(checkSegmentDefinition(chain[0]!, lookupOf(...chain)).errors).toEqual([]);
    expect(checkSegmentDefinition(nested('top', 's0'), lookupOf(...chain)).errors).toEqual([{ path: 'rules', message: `its segmentMatch clauses nest ${MAX_SEGMENT_DEPTH + 1} segments deep (at most ${MAX_SEGMENT_DEPTH})` }]);
    // A flag naming a stored cycle is refused too.
    expect(validateFlagDefinition(inSegments(['b']), undefined, lookupOf(b, c, nested('a', 'b')))).toEqual([{ path: 'rules[0].clauses[0].values', message: 'segmentMatch cycle: b -> c -> a -> b' }]);
  });

  it('checks kinds in includedContexts and rolloutContextKind', () => {
    const bad = segment('s', { includedContexts: [{ contextKind: 'multi', values: ['x'] }], rules: [{ id: 'r', clauses: [], weight: 1, rolloutContextKind: 'no kind' }] });
    expect(checkSegmentDefinition(bad).errors.map((p) => p.path)).toEqual(['includedContexts[0].contextKind', 'rules[0].rolloutContextKind']);
  });
});
