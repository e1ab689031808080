import { Coalescer } from './coalescer';

const list = <T>(gathered: T[] | undefined, item: T): T[] => [...(gathered ?? []), item];

describe('Coalescer', () => {
  beforeEach(() => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask'] });
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  it('gathers what comes within the window after the first item and emits it once; the next item opens a new window', async () => {
    const emitted: number[][] = [];
    const c = new Coalescer<number, number[]>({ windowMs: 25, fold: list, emit: (b) => void emitted.push(b) });
    const first = c.add(1);
    await jest.advanceTimersByTimeAsync(20);
    c.add(2);
    await jest.advanceTimersByTimeAsync(4);
    expect(emitted).toEqual([]);
    await jest.advanceTimersByTimeAsync(1);
    expect(emitted).toEqual([[1, 2]]);
    await expect(first).resolves.toBeUndefined();
    c.add(3);
    await jest.advanceTimersByTimeAsync(25);
    expect(emitted).toEqual([[1, 2], [3]]);
    expect(c.idle).toBe(true);
  });

  it('offer gathers like add without a promise per item, in the same batch as adds; a closed coalescer drops it', async () => {
    const emitted: number[][] = [];
    const c = new Coalescer<number, number[]>({ windowMs: 10, fold: list, emit: (b) => void emitted.push(b) });
    c.offer(1);
    const added = c.add(2);
    c.offer(3);
    await jest.advanceTimersByTimeAsync(10);
    expect(emitted).toEqual([[1, 2, 3]]);
    await expect(added).resolves.toBeUndefined();
    c.close();
    c.offer(4);
    await jest.advanceTimersByTimeAsync(10);
    expect(emitted).toEqual([[1, 2, 3]]);
    expect(c.idle).toBe(true);
  });

  it('folds as told: the latest per key, the greatest time', async () => {
    const emitted: number[] = [];
    const c = new Coalescer<number, number>({ windowMs: 10, fold: (max, t) => Math.max(max ?? 0, t), emit: (t) => void emitted.push(t) });
    for (const t of [5, 9, 7]) c.add(t);
    await jest.advanceTimersByTimeAsync(10);
    expect(emitted).toEqual([9]);
  });

  it('windowMs 0: gathers the rest of this event-loop turn', async () => {
    const emitted: string[][] = [];
    const c = new Coalescer<string, string[]>({ windowMs: 0, fold: list, emit: (b) => void emitted.push(b) });
    c.add('a');
    c.add('b');
    expect(emitted).toEqual([]);
    await jest.advanceTimersByTimeAsync(0);
    expect(emitted).toEqual([['a', 'b']]);
  });

  it('one emit at a time: what comes during a slow emit gathers and gets its own window after it', async () => {
    const emitted: number[][] = [];
    let finish!: () => void;
    const c = new Coalescer<number, number[]>({
      windowMs: 10,
      fold: list,
      emit: async (b) => {
        emitted.push(b);
        if (b[0] === 1) await new Promise<void>((r) => (finish = r));
      },
    });
    c.add(1);
    await jest.advanceTimersByTimeAsync(10);
    c.add(2);
    c.add(3);
    await jest.advanceTimersByTimeAsync(100);
    expect(emitted).toEqual([[1]]);
    finish();
    await jest.advanceTimersByTimeAsync(9);
    expect(emitted).toEqual([[1]]);
    await jest.advanceTimersByTimeAsync(1);
    expect(emitted).toEqual([[1], [2, 3]]);
  });

  it('with retry: a failed batch is tried again after afterMs, what came since merged onto it, and its adds resolve once it lands', async () => {
    const tries: Array<Map<string, number>> = [];
    let failing = true;
    const errors: unknown[] = [];
    const c = new Coalescer<[string, number], Map<string, number>>({
      windowMs: 10,
      fold: (m = new Map(), [k, v]) => m.set(k, v),
      emit: (m) => {
        tries.push(new Map(m));
        if (failing) throw new Error('Postgres away');
      },
      retry: { afterMs: 1000, merge: (failed, since) => new Map([...failed, ...(since ?? [])]), onError: (e) => errors.push(e) },
    });
    let landed = false;
    void c.add(['a', 1]).then(() => (landed = true));
    c.add(['b', 1]);
    await jest.advanceTimersByTimeAsync(10);
    c.add(['b', 2]);
    await jest.advanceTimersByTimeAsync(999);
    expect(tries).toHaveLength(1);
    failing = false;
    await jest.advanceTimersByTimeAsync(1);
    expect(tries.map((m) => Object.fromEntries(m))).toEqual([
      { a: 1, b: 1 },
      { a: 1, b: 2 },
    ]);
    expect([landed, errors.length]).toEqual([true, 1]);
  });

  it('without retry: a failed batch rejects its adds and is dropped; an ignored rejection is never unhandled', async () => {
    const c = new Coalescer<number, number[]>({
      windowMs: 0,
      fold: list,
      emit: () => {
        throw new Error('no');
      },
    });
    const watched = c.add(1);
    c.add(2); // ignored
    await jest.advanceTimersByTimeAsync(0);
    await expect(watched).rejects.toThrow('no');
    expect(c.idle).toBe(true);
  });

  it('flush emits what has gathered now, after an emit under way; close drops what is left', async () => {
    const emitted: number[][] = [];
    const c = new Coalescer<number, number[]>({ windowMs: 60_000, fold: list, emit: (b) => void emitted.push(b) });
    c.add(1);
    await c.flush();
    expect(emitted).toEqual([[1]]);
    const dropped = c.add(2);
    c.close();
    await expect(dropped).rejects.toThrow('closed before it was emitted');
    await expect(c.add(3)).rejects.toThrow('closed before it was emitted');
    await jest.advanceTimersByTimeAsync(60_000);
    expect(emitted).toEqual([[1]]);
  });
});
