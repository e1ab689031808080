import { type FlagDefinition, flagDefinitionBytes } from '@flagship/flag-evaluation';
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

  it('served() reads the flags for a copy of their own (the flag-data stream) bounded alike', async () => {
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
