import { CompiledFlag } from './compile';
import { LiveFlagSet } from './live-flag-set';
import type { FlagDefinition } from './types';

const flag = (key: string, value: number, extra: Partial<FlagDefinition> = {}): FlagDefinition => ({
  key,
  type: 'number',
  defaultValue: value,
  variations: [{ id: 'v', name: 'V', value, weight: 0 }],
  enabled: true,
  targets: [],
  rules: [],
  prerequisites: [],
  ...extra,
});

describe('LiveFlagSet', () => {
  it('compiles a flag on first use and keeps the compiled form', () => {
    const snapshot = LiveFlagSet.of([flag('a', 1)]);
    const first = snapshot.get('a');
    expect(first).toBeInstanceOf(CompiledFlag);
    expect(snapshot.get('a')).toBe(first);
    expect(snapshot.evaluate(first!, { key: 'u' }).value).toBe(1);
    expect(snapshot.get('missing')).toBeUndefined();
  });

  it('segments are applied beside flags, and a flag finds them through segmentMatch', () => {
    const gated = flag('gated', 0, {
      variations: [
        { id: 'out', name: 'out', value: 0, weight: 0 },
        { id: 'in', name: 'in', value: 1, weight: 0 },
      ],
      rules: [{ id: 'r', clauses: [{ attribute: '', op: 'segmentMatch', values: ['beta'] }], variationId: 'in' }],
    });
    const set = LiveFlagSet.of([gated]);
    const beta = { key: 'beta', name: 'Beta', included: ['u1'], excluded: [], includedContexts: [{ contextKind: 'organization', values: ['acme'] }], excludedContexts: [], rules: [] };
    expect(set.evaluate(set.get('gated')!, { key: 'u1' }).value).toBe(0);
    set.applySegments([beta], []);
    expect(set.segmentCount).toBe(1);
    expect(set.evaluate(set.get('gated')!, { key: 'u1' }).value).toBe(1);
    expect(set.evaluate(set.get('gated')!, { kind: 'multi', user: { key: 'x' }, organization: { key: 'acme' } }).value).toBe(1);
    set.applySegments([{ ...beta, included: [] }], []);
    expect(set.evaluate(set.get('gated')!, { key: 'u1' }).value).toBe(0);
    set.applySegments([], ['beta']);
    expect(set.segmentCount).toBe(0);
  });

  it('later definitions of a key win', () => {
    const snapshot = LiveFlagSet.of([flag('a', 1), flag('a', 2)]);
    expect(snapshot.size).toBe(1);
    expect(snapshot.evaluate(snapshot.get('a')!, { key: 'u' }).value).toBe(2);
  });

  it('apply puts changes in and takes removals out, keeping compiled flags it does not touch', () => {
    const snapshot = LiveFlagSet.of([flag('a', 1), flag('b', 1), flag('keep', 9)]);
    const kept = snapshot.get('keep');
    const oldA = snapshot.get('a');
    const before = snapshot.updatedAt;
    snapshot.apply([flag('a', 2), flag('c', 3)], ['b']);
    expect([...snapshot.keys()].sort()).toEqual(['a', 'c', 'keep']);
    expect(snapshot.get('a')).not.toBe(oldA);
    expect(snapshot.evaluate(snapshot.get('a')!, { key: 'u' }).value).toBe(2);
    expect(snapshot.get('b')).toBeUndefined();
    expect(snapshot.get('keep')).toBe(kept);
    expect(snapshot.updatedAt).toBeGreaterThanOrEqual(before);
  });

  it('apply takes a flag as its JSON text too, compiled on first use like one of ofTexts', () => {
    const snapshot = LiveFlagSet.of([flag('a', 1)]);
    snapshot.apply([{ key: 'a', text: JSON.stringify(flag('a', 5)) }, { key: 'b', text: JSON.stringify(flag('b', 6)) }], []);
    expect(snapshot.evaluate(snapshot.get('a')!, { key: 'u' }).value).toBe(5);
    expect(snapshot.get('b')).toBeInstanceOf(CompiledFlag);
    expect(snapshot.evaluate(snapshot.get('b')!, { key: 'u' }).value).toBe(6);
  });

  it('resolves prerequisites within the snapshot, compiling them as needed', () => {
    const gated = flag('gated', 1, {
      prerequisites: [{ key: 'gate', variationId: 'on' }],
      offValue: 0,
      variations: [
        { id: 'zero', name: '0', value: 0, weight: 0 },
        { id: 'one', name: '1', value: 1, weight: 0 },
      ],
    });
    const gate = (enabled: boolean): FlagDefinition => ({
      key: 'gate',
      type: 'boolean',
      defaultValue: false,
      variations: [
        { id: 'on', name: 'On', value: true, weight: 1 },
        { id: 'off', name: 'Off', value: false, weight: 0 },
      ],
      enabled,
      targets: [],
      rules: [],
      prerequisites: [],
    });
    const open = LiveFlagSet.of([gated, gate(true)]);
    expect(open.evaluate(open.get('gated')!, { key: 'u' })).toMatchObject({ value: 1, reason: 'FALLTHROUGH' });
    open.apply([gate(false)], []);
    expect(open.evaluate(open.get('gated')!, { key: 'u' })).toMatchObject({ value: 0, reason: 'PREREQUISITE_FAILED' });
  });

  it('values() yields every flag compiled', () => {
    const snapshot = LiveFlagSet.of([flag('a', 1), flag('b', 2)]);
    expect([...snapshot.values()].map((f) => f.key)).toEqual(['a', 'b']);
  });
});
