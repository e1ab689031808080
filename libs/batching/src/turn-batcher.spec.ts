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
