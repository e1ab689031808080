import { TurnBatcher } from './turn-batcher';

describe('TurnBatcher', () => {
  it('hands the items of one event-loop turn to one run, and answers each in order', async () => {
    const runs: number[][] = [];
    const b = new TurnBatcher<number, number>(async (items) => {
      runs.push(items);
      return items.map((i) => i * 10);
    });
    const first = await Promise.all([b.add(1), b.add(2), b.add(3)]);
    const second = await b.add(4);
    expect(first).toEqual([10, 20, 30]);
    expect(second).toBe(40);
    expect(runs).toEqual([[1, 2, 3], [4]]);
  });

  it('cuts batches at the maximum', async () => {
    const sizes: number[] = [];
    const b = new TurnBatcher<number, number>(async (items) => {
      sizes.push(items.length);
      return items;
    }, 2);
    await Promise.all([1, 2, 3, 4, 5].map((i) => b.add(i)));
    expect(sizes).toEqual([2, 2, 1]);
  });

  it('rejects every item of a failed batch, and later batches still run', async () => {
    let fail = true;
    const b = new TurnBatcher<number, number>(async (items) => {
      if (fail) throw new Error('down');
      return items;
    });
    const results = await Promise.allSettled([b.add(1), b.add(2)]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    fail = false;
    await expect(b.add(3)).resolves.toBe(3);
  });

  it('rejects items a run left unanswered', async () => {
    const b = new TurnBatcher<number, number>(async () => [1]);
    const results = await Promise.allSettled([b.add(1), b.add(2)]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected']);
  });
});

describe('TurnBatcher with maxInFlight', () => {
  it('gathers what arrives while a run is under way into the next run, never more runs at once than allowed', async () => {
    const runs: number[][] = [];
    let running = 0;
    let most = 0;
    const gates: Array<() => void> = [];
    const b = new TurnBatcher<number, number>(
      async (items) => {
        runs.push(items);
        most = Math.max(most, ++running);
        await new Promise<void>((r) => gates.push(r));
        running--;
        return items.map((i) => -i);
      },
      1000,
      1,
    );
    const first = b.add(1);
    await new Promise((r) => setImmediate(r));
    expect(runs).toEqual([[1]]);
    // Three later turns, while the first run is under way: they wait, together.
    const later: Array<Promise<number>> = [];
    for (const i of [2, 3, 4]) {
      later.push(b.add(i));
      await new Promise((r) => setImmediate(r));
    }
    expect(runs).toEqual([[1]]);
    gates.shift()!();
    await expect(first).resolves.toBe(-1);
    await new Promise((r) => setImmediate(r));
    expect(runs).toEqual([[1], [2, 3, 4]]);
    gates.shift()!();
    await expect(Promise.all(later)).resolves.toEqual([-2, -3, -4]);
    expect(most).toBe(1);
  });

  it('still cuts gathered items at the maximum batch, and a failed run lets the next one go', async () => {
    const sizes: number[] = [];
    let fail = true;
    const b = new TurnBatcher<number, number>(
      async (items) => {
        sizes.push(items.length);
        await new Promise((r) => setImmediate(r));
        if (fail) {
          fail = false;
          throw new Error('down');
        }
        return items;
      },
      2,
      1,
    );
    const results = await Promise.allSettled([1, 2, 3, 4, 5].map((i) => b.add(i)));
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'fulfilled', 'fulfilled', 'fulfilled']);
    expect(sizes).toEqual([2, 2, 1]);
  });
});
