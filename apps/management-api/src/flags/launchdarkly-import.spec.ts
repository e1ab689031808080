import { evaluateFlag, type FlagDefinition } from '@flagship/flag-evaluation';
import { importedClientSideAvailability, inferFlagType, mapLaunchDarklyFlags, mapLaunchDarklySegments, parseLaunchDarklyData, relativeWeights } from './launchdarkly-import';

const ids = () => {
  let n = 0;
  return () => `v${n++}`;
};

describe('LaunchDarkly SDK data mapping (pure)', () => {
  it('turns weights out of 100000 into relative weights that pick the same slices', () => {
    expect(relativeWeights([25_000, 75_000])).toEqual([25_000, 75_000]);
    // Short of 100000: LaunchDarkly gives the rest to the last slice.
    expect(relativeWeights([10_000, 20_000])).toEqual([10_000, 90_000]);
    // Past 100000: no bucket reaches beyond it.
    expect(relativeWeights([60_000, 60_000, 5])).toEqual([60_000, 40_000, 0]);
    expect(relativeWeights([0, 0])).toEqual([0, 100_000]);
  });

  it('keeps attributes as LaunchDarkly wrote them, with the contextKind that decides literal or reference', () => {
    const parsed = parseLaunchDarklyData({
      flags: {
        f: {
          variations: ['a', 'b'],
          fallthrough: { rollout: { variations: [{ variation: 0, weight: 50000 }, { variation: 1, weight: 50000 }], bucketBy: '/a/b' } },
          rules: [
            { id: 'old', clauses: [{ attribute: '/a/b', op: 'in', values: ['x'] }], rollout: { contextKind: 'user', bucketBy: '/a/b', variations: [{ variation: 0, weight: 100000 }] } },
            { id: 'new', clauses: [{ contextKind: 'user', attribute: '/a/b', op: 'in', values: ['x'] }], variation: 1 },
          ],
        },
      },
    });
    const { flags, errors } = mapLaunchDarklyFlags(parsed.flags, () => undefined, ids());
    expect(errors).toEqual({});
    expect(flags[0]?.rules.map((r) => [r.clauses, r.rollout?.bucketBy, r.rollout?.contextKind])).toEqual([
      [[{ attribute: '/a/b', op: 'in', values: ['x'] }], '/a/b', 'user'],
      [[{ attribute: '/a/b', contextKind: 'user', op: 'in', values: ['x'] }], undefined, undefined],
      [[], '/a/b', undefined],
    ]);
    // The built-ins (`kind`, `anonymous`) are the evaluator's now: imported as written.
    const clauseOf = (clause: Record<string, unknown>) =>
      mapLaunchDarklyFlags(parseLaunchDarklyData({ flags: { g: { variations: [1, 2], fallthrough: { variation: 0 }, rules: [{ clauses: [{ op: 'in', values: [1], ...clause }], variation: 0 }] } } }).flags, () => undefined, ids());
    expect(clauseOf({ attribute: '/kind', contextKind: 'user' }).flags[0]?.rules[0]?.clauses).toEqual([{ attribute: '/kind', contextKind: 'user', op: 'in', values: [1] }]);
    expect(clauseOf({ attribute: '/a/b', contextKind: 'organization' }).flags[0]?.rules[0]?.clauses).toEqual([{ attribute: '/a/b', contextKind: 'organization', op: 'in', values: [1] }]);
    expect(clauseOf({ attribute: 'a', contextKind: 'multi' }).errors).toEqual({ 'flags.g.rules[0].clauses[0].contextKind': "'multi' is not a context kind" });
  });

  it('imports kinds everywhere: targets of other kinds in LaunchDarkly order, rollouts by kind, segmentMatch when the segments come too', () => {
    const parsed = parseLaunchDarklyData({
      flags: {
        f: {
          variations: ['a', 'b'],
          fallthrough: { rollout: { contextKind: 'organization', bucketBy: '/billing/id', variations: [{ variation: 0, weight: 100000 }] } },
          targets: [{ values: ['u1'], variation: 1 }],
          contextTargets: [
            { contextKind: 'organization', values: ['o1'], variation: 0 },
            { contextKind: 'user', values: [], variation: 1 },
          ],
          rules: [{ id: 'seg', clauses: [{ attribute: '', op: 'segmentMatch', values: ['beta'], negate: true }], variation: 1 }],
        },
      },
      segments: { beta: { key: 'beta', included: ['u1'], rules: [] } },
    });
    expect([...parsed.segments.keys()]).toEqual(['beta']);
    const refused = mapLaunchDarklyFlags(parsed.flags, () => undefined, ids());
    expect(refused.errors).toEqual({ 'flags.f.rules[0].clauses[0].op': 'segmentMatch: import its segments in the same request' });
    const { flags, errors } = mapLaunchDarklyFlags(parsed.flags, () => undefined, ids(), (k) => parsed.segments.has(k));
    expect(errors).toEqual({});
    expect(flags[0]?.targets).toEqual([
      { variationId: 'v0', values: ['o1'], contextKind: 'organization' },
      { variationId: 'v1', values: ['u1'] },
    ]);
    expect(flags[0]?.rules[0]?.clauses).toEqual([{ attribute: '', op: 'segmentMatch', values: ['beta'], negate: true }]);
    expect(flags[0]?.rules[1]?.rollout).toMatchObject({ contextKind: 'organization', bucketBy: '/billing/id' });
    expect(mapLaunchDarklyFlags(parsed.flags, () => undefined, ids(), () => false).errors).toEqual({ 'flags.f.rules[0].clauses[0].values[0]': 'names no segment of this import or this environment ("beta")' });
  });

  it('maps LaunchDarkly segments: keys per kind, weighted rules by kind, salt absent as empty; refuses big segments and unknown fields', () => {
    const parsed = parseLaunchDarklyData({
      flags: {},
      segments: {
        s: {
          key: 's',
          version: 3,
          included: ['u1'],
          excludedContexts: [{ contextKind: 'organization', values: ['o2'] }],
          rules: [{ id: 'r', clauses: [{ contextKind: 'organization', attribute: 'plan', op: 'in', values: ['pro'] }, { attribute: '', op: 'segmentMatch', values: ['t'] }], weight: 25000, bucketBy: '/billing/id', rolloutContextKind: 'organization' }],
        },
        t: { key: 't', salt: 'pepper', includedContexts: [{ contextKind: 'device', values: ['d1'] }] },
        big: { key: 'big', unbounded: true, generation: 2 },
        odd: { key: 'odd', rules: [{ clauses: [], weight: 'half', trackEvents: true }] },
        gone: { key: 'gone', deleted: true },
      },
    });
    const { segments, errors } = mapLaunchDarklySegments(parsed.segments, (k) => parsed.segments.has(k));
    expect(errors).toEqual({
      'segments.big.unbounded': 'a big segment (its members live outside the segment) cannot be imported',
      'segments.odd.rules[0].trackEvents': "is not a field LaunchDarkly's SDKs read here",
      'segments.odd.rules[0].weight': 'must be an integer (out of 100000)',
    });
    expect(segments).toEqual([
      {
        key: 's',
        name: 's',
        included: ['u1'],
        excluded: [],
        includedContexts: [],
        excludedContexts: [{ contextKind: 'organization', values: ['o2'] }],
        rules: [{ id: 'r', clauses: [{ contextKind: 'organization', attribute: 'plan', op: 'in', values: ['pro'] }, { attribute: '', op: 'segmentMatch', values: ['t'] }], weight: 25000, bucketBy: '/billing/id', rolloutContextKind: 'organization' }],
        salt: '',
      },
      { key: 't', name: 't', included: [], excluded: [], includedContexts: [{ contextKind: 'device', values: ['d1'] }], excludedContexts: [], rules: [], salt: 'pepper' },
    ]);
    expect(parsed.skipped).toEqual([{ key: 'gone', reason: 'a segment deleted in LaunchDarkly (a tombstone)' }]);
  });

  it.each([
    [[true, false], 'boolean'],
    [['a'], 'string'],
    [[1, 2.5], 'number'],
    [[{ a: 1 }, [1]], 'json'],
    [[], 'must hold at least one variation'],
    [[1, 'a'], 'mix number and string values: our flags have one type'],
    [[null, 1], 'hold null: our flags are boolean, string, number or JSON (object/array) flags'],
  ] as const)('infers the type of %p: %s', (values, expected) => {
    expect(inferFlagType(values)).toBe(expected);
  });

  it('reads flag maps, arrays, flagValues, and skips tombstones', () => {
    const parsed = parseLaunchDarklyData({ flags: { a: { on: true }, b: { key: 'b', deleted: true } }, segments: {}, flagValues: { c: 'blue' } });
    expect(parsed.errors).toEqual({});
    expect([...parsed.flags.keys()]).toEqual(['c', 'a']);
    expect(parsed.skipped).toEqual([{ key: 'b', reason: 'deleted in LaunchDarkly (a tombstone)' }]);
    expect(parseLaunchDarklyData([{ key: 'x' }, { key: 'x' }]).errors).toEqual({ '[1].key': "flag 'x' is listed twice" });
  });

  it('refuses strings Postgres cannot store and JSON nested too deep, naming where', () => {
    const deep: unknown[] = [];
    let cursor = deep;
    for (let i = 0; i < 100; i++) cursor = (cursor[0] = []) as unknown[];
    expect(
      parseLaunchDarklyData({ flags: { a: { variations: ['ok', 'nul\u0000'], rules: [{ clauses: [{ values: ['\ud800'] }] }] }, ['b\u0000']: {}, c: { variations: deep } } }).errors,
    ).toEqual({
      'flags.a.variations[1]': 'must not hold NUL characters or unpaired surrogates',
      'flags.a.rules[0].clauses[0].values[0]': 'must not hold NUL characters or unpaired surrogates',
      flags: 'has a field name holding NUL characters or unpaired surrogates',
      // The body is level 0: the 64th level down is 61 arrays into `variations`.
      [`flags.c.variations${'[0]'.repeat(61)}`]: 'is nested deeper than 64 levels',
    });
    expect(parseLaunchDarklyData([{ key: 'ok', variations: ['\ud83d\ude00 fine'] }]).errors).toEqual({});
  });

  it('maps a flagValues entry to a flag serving its value, as the SDK file data source does', () => {
    const { flags, errors } = mapLaunchDarklyFlags(parseLaunchDarklyData({ flagValues: { c: 'blue' } }).flags, () => undefined, ids());
    expect(errors).toEqual({});
    const [c] = flags;
    expect(c).toMatchObject({ key: 'c', type: 'string', enabled: true, offValue: 'blue', salt: '', variations: [{ id: 'v0', name: 'blue', value: 'blue', weight: 0 }] });
    const def = { ...c, offValue: 'blue' } as unknown as FlagDefinition;
    expect(evaluateFlag(def, { key: 'anyone' })).toMatchObject({ value: 'blue', variationId: 'v0' });
  });

  it('reuses the ids of an existing flag by position and resolves prerequisites outside the import', () => {
    const parsed = parseLaunchDarklyData({
      flags: { f: { on: true, variations: [true, false], offVariation: 1, fallthrough: { variation: 0 }, prerequisites: [{ key: 'outside', variation: 1 }] } },
    });
    const existing = (key: string) =>
      key === 'f'
        ? { type: 'boolean' as const, variations: [{ id: 'old-true', name: 'On', value: true, weight: 3 }] }
        : key === 'outside'
          ? { type: 'string' as const, variations: [{ id: 'o0', name: 'a', value: 'a', weight: 0 }, { id: 'o1', name: 'b', value: 'b', weight: 0 }] }
          : undefined;
    const { flags, errors } = mapLaunchDarklyFlags(parsed.flags, existing, ids());
    expect(errors).toEqual({});
    expect(flags[0]?.variations).toEqual([
      { id: 'old-true', name: 'On', value: true, description: '', weight: 3 },
      { id: 'v0', name: 'false', value: false, description: '', weight: 0 },
    ]);
    expect(flags[0]?.prerequisites).toEqual([{ key: 'outside', variationId: 'o1' }]);
    const typeChange = mapLaunchDarklyFlags(parseLaunchDarklyData({ flags: { outside: { variations: [1, 2], fallthrough: { variation: 0 } } } }).flags, existing, ids());
    expect(typeChange.errors).toEqual({ 'flags.outside.variations': "make a number flag, but 'outside' is a string flag here; delete it first to change its type" });
  });

  it('keeps contextTargets order, taking user entries from targets', () => {
    const parsed = parseLaunchDarklyData({
      flags: {
        f: {
          variations: ['a', 'b'],
          fallthrough: { variation: 0 },
          targets: [
            { values: ['k1'], variation: 0 },
            { values: ['k2'], variation: 1 },
          ],
          contextTargets: [
            { contextKind: 'user', values: [], variation: 1 },
            { contextKind: 'device', values: [], variation: 0 },
            { contextKind: 'user', values: [], variation: 0 },
          ],
        },
      },
    });
    const { flags, errors } = mapLaunchDarklyFlags(parsed.flags, () => undefined, ids());
    expect(errors).toEqual({});
    expect(flags[0]?.targets).toEqual([
      { variationId: 'v1', values: ['k2'] },
      { variationId: 'v0', values: ['k1'] },
    ]);
  });

  it("reads LaunchDarkly's clientSideAvailability (absent fields false), else the legacy clientSide (mobile keys then saw every flag), else nothing", () => {
    const problems: string[] = [];
    const read = (raw: Record<string, unknown>) => importedClientSideAvailability(raw, (path, message) => void problems.push(`${path}: ${message}`));
    expect(read({ clientSideAvailability: { usingEnvironmentId: true }, clientSide: false })).toEqual({ usingEnvironmentId: true, usingMobileKey: false });
    expect(read({ clientSideAvailability: {} })).toEqual({ usingEnvironmentId: false, usingMobileKey: false });
    expect(read({ clientSide: false })).toEqual({ usingEnvironmentId: false, usingMobileKey: true });
    expect(read({ clientSide: true })).toEqual({ usingEnvironmentId: true, usingMobileKey: true });
    expect(read({})).toBeUndefined();
    expect(problems).toEqual([]);
    expect(read({ clientSideAvailability: [] })).toBeUndefined();
    expect(read({ clientSideAvailability: { usingMobileKey: 1 } })).toBeUndefined();
    expect(read({ clientSideAvailability: { usingJavaScript: true } })).toBeUndefined();
    expect(read({ clientSide: 'yes' })).toBeUndefined();
    expect(problems).toEqual([
      '.clientSideAvailability: must be an object {usingEnvironmentId, usingMobileKey}',
      '.clientSideAvailability.usingMobileKey: must be a boolean',
      ".clientSideAvailability.usingJavaScript: is not a field LaunchDarkly's SDKs read here",
      '.clientSide: must be a boolean',
    ]);
  });
});
