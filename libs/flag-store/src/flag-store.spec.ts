import { type FlagDefinition, flagDefinitionBytes } from '@flagship/flag-evaluation';
import { CHANNELS, type FlagChanged } from '@flagship/redis';
import { FakePubSub } from '@flagship/redis/testing';
import { numberFlag } from '@flagship/testing';
import { type FlagSetChanged, FlagSetTooLargeError, FlagStore, type FlagStoreOptions } from './flag-store';
import { FakeFlagStoreRepository } from './flag-store.repository.fake';

const T = 'tenant-a';
const E = 'production';

/** A JSON flag whose one variation holds `pad` characters: its size is about that. */
const flag = (key: string, pad = 10): FlagDefinition => ({
  key,
  type: 'json',
  defaultValue: {},
  variations: [{ id: 'v', name: 'V', value: { pad: 'x'.repeat(pad) }, weight: 0 }],
  enabled: true,
  targets: [],
  rules: [],
  prerequisites: [],
});
const bytes = (...defs: FlagDefinition[]) => defs.reduce((n, d) => n + flagDefinitionBytes(d), 0);

/** The store's byte bounds against an in-memory repository (no Postgres, no Redis: no change feed). */
describe('FlagStore bounded by bytes', () => {
  let repo: FakeFlagStoreRepository;
  const stores: FlagStore[] = [];
  const open = (options: Partial<FlagStoreOptions> = {}) => {
    const store = new FlagStore(repo, undefined, { reconcileMs: 60_000, maxEntries: 100, maxRetryMs: 50, ...options });
    stores.push(store);
    return store;
  };

  beforeEach(() => {
    repo = new FakeFlagStoreRepository();
  });
  afterEach(() => {
    for (const s of stores.splice(0)) s.close();
    jest.useRealTimers();
  });

  it('leaves a flag over maxFlagBytes out of its set and says so; the others are served', async () => {
    repo.put(T, E, flag('a'));
    repo.put(T, E, flag('huge', 5000));
    repo.put(T, E, flag('b'));
    const store = open({ maxFlagBytes: 1000 });
    const view = await store.view(T, E);
    expect([...view.set.keys()].sort()).toEqual(['a', 'b']);
    expect(view.set.get('huge')).toBeUndefined();
    expect(view.refused).toEqual(new Map([['huge', flagDefinitionBytes(flag('huge', 5000))]]));
    expect(store.status(T, E)).toMatchObject({ flags: 2, refused: { huge: flagDefinitionBytes(flag('huge', 5000)) } });
  });

  it('refuses a set whose stored sizes pass maxSetBytes without reading its flags; nothing is held, and it loads once smaller', async () => {
    for (let i = 0; i < 5; i++) repo.put(T, E, flag(`f${i}`, 400));
    const limit = bytes(flag('f0', 400)) * 4;
    const store = open({ maxSetBytes: limit, tooLargeError: (r) => new Error(`told: ${r.bytes} > ${r.limit} (read: ${r.read})`) });
    await expect(store.view(T, E)).rejects.toThrow(`told: ${bytes(flag('f0', 400)) * 5} > ${limit} (read: false)`);
    expect(repo.reads).toEqual([`bytes ${T}/${E}`]);
    expect(store.size).toBe(0);
    expect(store.bytes).toBe(0);

    repo.remove(T, E, 'f4');
    expect((await store.view(T, E)).set.size).toBe(4);
    expect(store.bytes).toBe(limit);
  });

  it('refuses a set measured over maxSetBytes once read, when the stored sizes did not say (rows written before them)', async () => {
    for (let i = 0; i < 3; i++) repo.put(T, E, flag(`f${i}`, 400), { unmeasured: true });
    const store = open({ maxSetBytes: bytes(flag('f0', 400)) * 2 });
    const refusal = await store.view(T, E).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refusal).toBeInstanceOf(FlagSetTooLargeError);
    expect(refusal).toMatchObject({ tenantId: T, environment: E, read: true, bytes: bytes(flag('f0', 400)) * 3 });
    expect(store.size).toBe(0);
  });

  it('a change that would take a held set past maxSetBytes is not applied: keepLastGoodWhenTooLarge serves the last good set', async () => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask'] });
    repo.put(T, E, flag('a'));
    const store = open({ maxSetBytes: bytes(flag('a'), flag('b', 300)) - 1, keepLastGoodWhenTooLarge: true });
    const before = await store.view(T, E);
    repo.put(T, E, flag('b', 300));
    store.invalidate(T, E, 'b');
    const after = await store.view(T, E);
    expect(after).toBe(before);
    expect([...after.set.keys()]).toEqual(['a']);
    expect(store.status(T, E).lastError?.message).toMatch(/over the \d+ bytes one environment's flags may take/);

    // Smaller: the change lands with the next retry (the store backs off after a failed load).
    repo.put(T, E, flag('b', 20));
    await jest.advanceTimersByTimeAsync(1000);
    expect([...(await store.view(T, E)).set.keys()].sort()).toEqual(['a', 'b']);
    expect(store.status(T, E).lastError).toBeUndefined();
  });

  it('without keepLastGoodWhenTooLarge the set is dropped and evaluations are told why', async () => {
    repo.put(T, E, flag('a'));
    const store = open({ maxSetBytes: bytes(flag('a'), flag('b', 300)) - 1 });
    await store.view(T, E);
    repo.put(T, E, flag('b', 300));
    store.invalidate(T, E, 'b');
    await expect(store.view(T, E)).rejects.toBeInstanceOf(FlagSetTooLargeError);
    expect(store.peek(T, E, { stale: true })).toBeUndefined();
    expect(store.bytes).toBe(0);
  });

  it('a flag changed past maxFlagBytes is taken out (listeners hear it removed) and comes back once small again', async () => {
    repo.put(T, E, flag('a'));
    repo.put(T, E, flag('b'));
    const store = open({ maxFlagBytes: 1000 });
    const changes: FlagSetChanged[] = [];
    store.onChange((c) => changes.push(c));
    await store.view(T, E);

    repo.put(T, E, flag('b', 2000));
    store.invalidate(T, E, 'b');
    const view = await store.view(T, E);
    expect([...view.set.keys()]).toEqual(['a']);
    expect(changes.at(-1)).toMatchObject({ keys: ['b'], flags: [], removed: ['b'] });
    expect(view.refused.has('b')).toBe(true);

    repo.put(T, E, flag('b', 20));
    store.invalidate(T, E, 'b');
    expect([...(await store.view(T, E)).set.keys()].sort()).toEqual(['a', 'b']);
    expect(changes.at(-1)).toMatchObject({ keys: ['b'], removed: [] });
    expect(changes.at(-1)!.flags.map((f) => f.key)).toEqual(['b']);
    expect(view.refused.size).toBe(0);
  });

  it('served() reads the flags as the store serves them (the export), bounded alike', async () => {
    repo.put(T, E, flag('a'));
    repo.put(T, E, flag('huge', 2000));
    const store = open({ maxFlagBytes: 1000, maxSetBytes: bytes(flag('a'), flag('huge', 2000)), tooLargeError: () => new Error('told') });
    expect((await store.served(T, E)).map((f) => f.key)).toEqual(['a']);
    repo.put(T, E, flag('b'));
    await expect(store.served(T, E)).rejects.toThrow('told');
  });

  it('holds at most maxBytes of all sets: the least recently read go first', async () => {
    const one = bytes(flag('f', 1000));
    for (const t of ['t1', 't2', 't3']) repo.put(t, E, flag('f', 1000));
    const store = open({ maxBytes: Math.floor(one * 2.5) });
    await store.view('t1', E);
    await store.view('t2', E);
    await store.view('t1', E); // t1 read again: t2 is now the least recently read
    await store.view('t3', E);
    expect(store.size).toBe(2);
    expect(store.bytes).toBe(one * 2);
    expect(store.peek('t2', E, { stale: true })).toBeUndefined();
    expect(store.peek('t1', E)).toBeDefined();
    expect(store.peek('t3', E)).toBeDefined();
  });
});

/**
 * The store's diff, apply and listeners over the change feed (FakePubSub) and the fake repository,
 * on the fake clock. What only Postgres or Redis can break stays in flag-store.int-spec.ts.
 */
describe('FlagStore over the change feed', () => {
  const A = 'tenant-a';
  const B = 'tenant-b';
  let repo: FakeFlagStoreRepository;
  let pubsub: FakePubSub;
  const stores: FlagStore[] = [];
  const num = numberFlag;
  const open = (options: Partial<FlagStoreOptions> = {}) => {
    const store = new FlagStore(repo, pubsub, { reconcileMs: 60_000, maxEntries: 100, maxRetryMs: 200, ...options }).start();
    stores.push(store);
    const changes: FlagSetChanged[] = [];
    store.onChange((c) => {
      // Told once applied: what a listener reads is the changed set.
      expect(store.peek(c.tenantId, c.environment, { stale: true })?.set.updatedAt).toBe(c.at);
      changes.push(c);
    });
    return { store, changes };
  };
  const announce = (m: FlagChanged) => pubsub.publish(CHANNELS.flagChanged, m);
  const valueIn = (store: FlagStore, tenant: string, key: string, environment = E): unknown => {
    const view = store.peek(tenant, environment, { stale: true });
    const f = view?.set.get(key);
    return f === undefined ? 'missing' : view!.set.evaluate(f, { key: 'u1' }).value;
  };
  const settle = (ms = 0) => jest.advanceTimersByTimeAsync(ms);

  beforeEach(() => {
    jest.useFakeTimers({ now: Date.parse('2026-11-29T12:00:00Z'), doNotFake: ['nextTick', 'queueMicrotask'] });
    repo = new FakeFlagStoreRepository();
    pubsub = new FakePubSub();
  });
  afterEach(() => {
    for (const s of stores.splice(0)) s.close();
    jest.useRealTimers();
  });

  it('an announced change re-reads that flag alone, at once, applies it in place and tells its row; a repeat tells nothing; a deletion is told removed', async () => {
    for (const key of ['a1', 'a2', 'a3']) repo.put(A, E, num(key, 1));
    const { store, changes } = open();
    const view = await store.view(A, E);
    const compiled = new Map([...view.set.keys()].map((k) => [k, view.set.get(k)]));
    expect(changes).toEqual([{ tenantId: A, environment: E, keys: undefined, flags: [], removed: [], at: view.set.updatedAt }]);

    repo.put(A, E, num('a2', 2));
    await announce({ tenantId: A, environment: E, flagKey: 'a2', version: 2 });
    await settle();
    expect(changes[1]).toMatchObject({ keys: ['a2'], removed: [] });
    expect(changes[1]!.flags.map((f) => [f.key, f.definition.defaultValue])).toEqual([['a2', 2]]);
    expect(valueIn(store, A, 'a2')).toBe(2);
    expect(repo.reads).toEqual([`all ${A}/${E}`, `segments ${A}/${E}`, `keys ${A}/${E} a2`]);
    expect(store.peek(A, E)).toBe(view);
    expect(['a1', 'a3'].every((k) => view.set.get(k) === compiled.get(k))).toBe(true);

    await announce({ tenantId: A, environment: E, flagKey: 'a2', version: 2 });
    await settle();
    expect(repo.reads).toHaveLength(4);
    expect(changes).toHaveLength(2);

    repo.remove(A, E, 'a3');
    await announce({ tenantId: A, environment: E, flagKey: 'a3' });
    await settle();
    expect(changes[2]).toMatchObject({ keys: ['a3'], flags: [], removed: ['a3'] });
    expect(valueIn(store, A, 'a3')).toBe('missing');
    expect(view.rows.has('a3')).toBe(false);
  });

  it('holds the environment’s segments with its flags; an announced segment change re-reads that segment alone and tells it, with no flag keys; a deletion is told removed', async () => {
    const seg = (key: string, included: string[]) => ({ key, name: key, included, excluded: [], includedContexts: [], excludedContexts: [], rules: [] });
    repo.put(A, E, num('f', 1));
    repo.putSegment(A, E, seg('beta', ['u1']));
    repo.putSegment(A, E, seg('gamma', []));
    repo.putSegment(A, 'staging', seg('elsewhere', []));
    const { store, changes } = open({ keepJson: true });
    const view = await store.view(A, E);
    expect([...view.segments.keys()].sort()).toEqual(['beta', 'gamma']);
    expect(JSON.parse(view.segments.get('beta')!.json!)).toEqual({ ...seg('beta', ['u1']), version: expect.any(Number) });
    const weightBefore = store.bytes;
    changes.length = 0;
    repo.reads.length = 0;

    repo.putSegment(A, E, seg('beta', ['u1', 'u2']));
    await announce({ tenantId: A, environment: E, segmentKey: 'beta', version: 2 });
    await settle();
    expect(repo.reads).toEqual([`segment keys ${A}/${E} beta`]);
    expect(changes).toEqual([
      { tenantId: A, environment: E, keys: [], flags: [], removed: [], at: view.set.updatedAt, segments: [expect.objectContaining({ key: 'beta', definition: expect.objectContaining({ included: ['u1', 'u2'] }) })], removedSegments: [] },
    ]);
    expect(store.peek(A, E)?.segments.get('beta')?.definition.included).toEqual(['u1', 'u2']);
    expect(store.peek(A, E)?.segments.get('gamma')).toBe(view.segments.get('gamma'));
    expect(store.bytes).toBeGreaterThan(weightBefore);

    // A repeated announcement finds it as held: nothing told.
    await announce({ tenantId: A, environment: E, segmentKey: 'beta', version: 2 });
    await settle();
    expect(changes).toHaveLength(1);

    // The writer's own replica waits for the re-read too.
    repo.removeSegment(A, E, 'gamma');
    store.invalidateSegment(A, E, 'gamma');
    expect(store.peek(A, E)).toBeUndefined();
    expect([...(await store.view(A, E)).segments.keys()]).toEqual(['beta']);
    expect(changes[1]).toMatchObject({ keys: [], segments: [], removedSegments: ['gamma'] });
  });

  it('evaluations resolve segmentMatch through the held segments, and a segment-only change moves the set (`at`) and what it answers', async () => {
    const seg = (key: string, included: string[]) => ({ key, name: key, included, excluded: [], includedContexts: [], excludedContexts: [], rules: [] });
    const gated: FlagDefinition = {
      key: 'gated',
      type: 'boolean',
      defaultValue: false,
      enabled: true,
      variations: [true, false].map((value) => ({ id: String(value), name: String(value), value, weight: 0 })),
      targets: [],
      rules: [{ id: 'beta', clauses: [{ attribute: 'key', op: 'segmentMatch', values: ['beta'] }], variationId: 'true' }],
      prerequisites: [],
    };
    repo.put(A, E, gated);
    repo.putSegment(A, E, seg('beta', ['u1']));
    const { store, changes } = open();
    const view = await store.view(A, E);
    const answer = (key: string) => view.set.evaluate(view.set.get('gated')!, { key });
    expect(answer('u1')).toMatchObject({ value: true, reason: 'RULE_MATCH', ruleId: 'beta' });
    expect(answer('u2').value).toBe(false);
    const loadedAt = view.set.updatedAt;

    jest.setSystemTime(Date.now() + 1000);
    repo.putSegment(A, E, seg('beta', ['u2']));
    await announce({ tenantId: A, environment: E, segmentKey: 'beta', version: 2 });
    await settle();
    // orep's refetch events tell `at`: a change to segments alone must move it.
    expect(changes.at(-1)).toMatchObject({ keys: [], at: loadedAt + 1000 });
    expect(answer('u1').value).toBe(false);
    expect(answer('u2').value).toBe(true);

    jest.setSystemTime(Date.now() + 1000);
    repo.removeSegment(A, E, 'beta');
    await announce({ tenantId: A, environment: E, segmentKey: 'beta' });
    await settle();
    expect(changes.at(-1)).toMatchObject({ removedSegments: ['beta'], at: loadedAt + 2000 });
    // A segment gone matches no one (the flag naming it is refused at write; one left over serves its fallthrough).
    expect(answer('u2').value).toBe(false);
  });

  it('a reconcile finds segments changed without an announcement (compared by fingerprint, only those that differ re-read)', async () => {
    const seg = (key: string) => ({ key, name: key, included: [], excluded: [], includedContexts: [], excludedContexts: [], rules: [] });
    repo.put(A, E, num('f', 1));
    repo.putSegment(A, E, seg('kept'));
    const { store, changes } = open({ reconcileMs: 1000 });
    await store.view(A, E);
    changes.length = 0;
    repo.reads.length = 0;
    // Due reconcileMs after the last whole load, give or take 10 %.
    await settle(1200);
    expect(repo.reads).toEqual([`fingerprints ${A}/${E}`, `segment fingerprints ${A}/${E}`]);
    expect(changes).toEqual([]);
    repo.putSegment(A, E, seg('missed'));
    repo.reads.length = 0;
    await settle(1200);
    expect(repo.reads).toEqual([`fingerprints ${A}/${E}`, `segment fingerprints ${A}/${E}`, `segment keys ${A}/${E} missed`]);
    expect(changes.map((c) => [c.keys, c.segments?.map((x) => x.key)])).toEqual([[[], ['missed']]]);
    expect(store.peek(A, E)?.segments.has('missed')).toBe(true);
  });

  it("the writer's own replica: after invalidate, the set is not served as current until the re-read lands", async () => {
    repo.put(A, E, num('w', 1));
    const { store } = open();
    expect(valueIn(store, A, 'w')).toBe('missing');
    await store.view(A, E);
    repo.put(A, E, num('w', 2));
    store.invalidate(A, E, 'w');
    expect(store.peek(A, E)).toBeUndefined();
    const view = await store.view(A, E);
    expect(view.set.evaluate(view.set.get('w')!, { key: 'u1' }).value).toBe(2);
  });

  it('an announcement without a flag key re-reads the whole set and tells the keys that differed; one without an environment reaches every environment of the tenant', async () => {
    repo.put(A, E, num('g1', 1));
    repo.put(A, 'staging', num('g1', 1));
    repo.put(A, E, num('g2', 1));
    repo.put(A, E, num('gone', 1));
    const { store, changes } = open();
    await store.view(A, E);
    await store.view(A, 'staging');
    changes.length = 0;
    repo.reads.length = 0;

    repo.put(A, E, num('g2', 5));
    repo.remove(A, E, 'gone');
    await announce({ tenantId: A, environment: E });
    await settle();
    expect(changes).toEqual([expect.objectContaining({ environment: E, keys: ['g2', 'gone'], removed: ['gone'] })]);
    expect(repo.reads).toEqual([`all ${A}/${E}`, `segments ${A}/${E}`]);

    repo.put(A, E, num('g1', 7));
    repo.put(A, 'staging', num('g1', 7));
    await announce({ tenantId: A.toUpperCase(), flagKey: 'g1' });
    await settle();
    expect(changes.slice(1).map((c) => [c.environment, c.keys]).sort()).toEqual([
      [E, ['g1']],
      ['staging', ['g1']],
    ]);
    expect([valueIn(store, A, 'g1'), valueIn(store, A, 'g1', 'staging')]).toEqual([7, 7]);
  });

  it('a lost announcement is healed by the reconcile, which compares fingerprints and re-reads only what differs, projects included', async () => {
    repo.put(A, E, num('r1', 1), { projectId: 'p1' });
    repo.put(A, E, num('r2', 1));
    const { store, changes } = open({ reconcileMs: 1000 });
    await store.view(A, E);
    expect(store.peek(A, E)!.projects.get('r1')).toBe('p1');
    repo.reads.length = 0;

    repo.put(A, E, num('r2', 9)); // never announced
    repo.put(A, E, num('r1', 1), { projectId: null }); // its project deleted
    await settle(1200);
    expect(valueIn(store, A, 'r2')).toBe(9);
    expect(store.peek(A, E)!.projects.get('r1')).toBeNull();
    expect(repo.reads.slice(0, 2)).toEqual([`fingerprints ${A}/${E}`, `keys ${A}/${E} r1,r2`]);
    expect(changes.at(-1)).toMatchObject({ keys: ['r1', 'r2'] });
  });

  it('with the repository failing the last good set is served and says so; what was announced meanwhile lands once it answers', async () => {
    repo.put(A, E, num('pg', 1));
    const { store, changes } = open();
    await store.view(A, E);
    repo.failing = new Error('connection refused');
    repo.put(A, E, num('pg', 2));
    await announce({ tenantId: A, environment: E, flagKey: 'pg', version: 2 });
    await settle();
    expect(store.status(A, E).lastError!.message).toBe('reading flags from Postgres failed: connection refused');
    expect(valueIn(store, A, 'pg')).toBe(1);
    const view = await store.view(A, E);
    expect(view.set.evaluate(view.set.get('pg')!, { key: 'u1' }).value).toBe(1);
    repo.failing = undefined;
    await settle(200);
    expect(valueIn(store, A, 'pg')).toBe(2);
    expect(changes.at(-1)).toMatchObject({ keys: ['pg'] });
    expect(store.status(A, E).lastError).toBeUndefined();
  });

  it("tenants are isolated: a tenant's announcements never read or touch another tenant's set", async () => {
    repo.put(A, E, num('shared', 1));
    repo.put(B, E, num('shared', 100));
    const { store, changes } = open();
    const viewOfA = await store.view(A, E);
    await store.view(B, E);
    const updatedA = viewOfA.set.updatedAt;
    repo.reads.length = 0;
    changes.length = 0;
    repo.put(B, E, num('shared', 200));
    await announce({ tenantId: B, environment: E, flagKey: 'shared' });
    await announce({ tenantId: B, flagKey: 'shared' });
    await announce({ tenantId: B, environment: E });
    await settle();
    expect(valueIn(store, B, 'shared')).toBe(200);
    expect(repo.reads.length).toBeGreaterThan(0);
    expect(repo.reads.every((r) => r.includes(B) && !r.includes(A))).toBe(true);
    expect(changes.every((c) => c.tenantId === B)).toBe(true);
    expect([valueIn(store, A, 'shared'), viewOfA.set.updatedAt, store.peek(A, E)]).toEqual([1, updatedA, viewOfA]);
  });

  it('a listener that throws is isolated from the others and from the store', async () => {
    repo.put(A, E, num('x', 1));
    const { store, changes } = open();
    store.onChange(() => {
      throw new Error('a broken listener');
    });
    const after: string[][] = [];
    store.onChange((c) => after.push([...(c.keys ?? ['*'])]));
    await store.view(A, E);
    repo.put(A, E, num('x', 2));
    await announce({ tenantId: A, environment: E, flagKey: 'x' });
    await settle();
    expect(valueIn(store, A, 'x')).toBe(2);
    expect([changes.length, after]).toEqual([2, [['*'], ['x']]]);
  });

  it('rows: each flag as held (fingerprint, bytes), with keepJson the JSON a stream sends, which the set compiles from; a refused flag has none', async () => {
    repo.put(A, E, num('a', 1));
    repo.put(A, E, flag('huge', 5000));
    const plain = open({ maxFlagBytes: 1000 }).store;
    const rows = (await plain.view(A, E)).rows;
    expect([...rows.keys()].sort()).toEqual(['a', 'huge']);
    expect(rows.get('a')).toEqual({ fingerprint: expect.any(String), bytes: flagDefinitionBytes(num('a', 1)), json: undefined });

    const { store } = open({ maxFlagBytes: 1000, keepJson: true });
    expect(store.keepsJson).toBe(true);
    const view = await store.view(A, E);
    expect(JSON.parse(view.rows.get('a')!.json!)).toMatchObject(num('a', 1));
    expect(view.rows.get('huge')).toMatchObject({ bytes: flagDefinitionBytes(flag('huge', 5000)), json: undefined });
    expect(valueIn(store, A, 'a')).toBe(1);
    // A change replaces the row: a holder of the old text never sees it change under it.
    const before = view.rows.get('a');
    repo.put(A, E, num('a', 3));
    await announce({ tenantId: A, environment: E, flagKey: 'a' });
    await settle();
    expect(JSON.parse(view.rows.get('a')!.json!)).toMatchObject(num('a', 3));
    expect(JSON.parse(before!.json!)).toMatchObject(num('a', 1));
    expect(valueIn(store, A, 'a')).toBe(3);
  });

  it('holds at most maxEntries tenant-environments, dropping the least recently read, except those held (a stream), whose changes are still heard', async () => {
    repo.put(A, E, num('s', 1));
    const { store, changes } = open({ maxEntries: 2 });
    await store.view(A, E);
    const release = store.hold(A, E);
    for (const env of ['e1', 'e2', 'e3']) await store.view(B, env);
    expect(store.size).toBe(2);
    expect(store.peek(A, E)).toBeDefined();
    expect(store.peek(B, 'e2', { stale: true })).toBeUndefined();
    repo.put(A, E, num('s', 2));
    await announce({ tenantId: A, environment: E, flagKey: 's' });
    await settle();
    expect([valueIn(store, A, 's'), changes.at(-1)?.keys]).toEqual([2, ['s']]);
    release();
    await store.view(B, 'e1');
    expect(store.peek(A, E, { stale: true })).toBeUndefined();
    // Dropped ones load again when asked for.
    expect(valueIn(store, A, 's')).toBe('missing');
    await store.view(A, E);
    expect(repo.reads.filter((r) => r === `all ${A}/${E}`)).toHaveLength(2);
  });
});
