import { type EvaluatedFlag, EvaluationRecorder, type EvaluationWrites } from './evaluation-recorder';

const T1 = '00000000-0000-4000-8000-000000000001';
const T2 = '00000000-0000-4000-8000-000000000002';

/** The writes as a list of batches; `failNext` makes the next write throw. */
class FakeWrites implements EvaluationWrites {
  batches: EvaluatedFlag[][] = [];
  failNext = false;
  async recordEvaluations(rows: readonly EvaluatedFlag[]): Promise<void> {
    if (this.failNext) {
      this.failNext = false;
      throw new Error('connection refused');
    }
    this.batches.push([...rows]);
  }
}

const keys = (batch: EvaluatedFlag[] | undefined) => (batch ?? []).map((r) => `${r.tenantId.slice(-1)}/${r.environment}/${r.flagKey}`);

describe('EvaluationRecorder', () => {
  beforeEach(() => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask'], now: new Date('2026-03-01T00:00:00Z') });
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  it('writes each flag-environment once per window however often it is evaluated, dated when first seen', async () => {
    const writes = new FakeWrites();
    const recorder = new EvaluationRecorder(writes, { maxPerFlush: 100 });
    for (let i = 0; i < 1000; i++) recorder.record(T1, 'production', 'checkout');
    await jest.advanceTimersByTimeAsync(10_000);
    recorder.record(T1, 'staging', 'checkout');
    recorder.record(T2, 'production', 'checkout');
    await jest.advanceTimersByTimeAsync(49_999);
    expect(writes.batches).toEqual([]);
    await jest.advanceTimersByTimeAsync(1);
    expect(writes.batches).toHaveLength(1);
    expect(keys(writes.batches[0])).toEqual(['1/production/checkout', '1/staging/checkout', '2/production/checkout']);
    expect(writes.batches[0]![0]!.at).toEqual(new Date('2026-03-01T00:00:00Z'));
    expect(writes.batches[0]![1]!.at).toEqual(new Date('2026-03-01T00:00:10Z'));
    // The next evaluation opens the next window: a minute later again.
    recorder.record(T1, 'production', 'checkout');
    await jest.advanceTimersByTimeAsync(59_999);
    expect(writes.batches).toHaveLength(1);
    await jest.advanceTimersByTimeAsync(1);
    expect(keys(writes.batches[1])).toEqual(['1/production/checkout']);
  });

  it('a window holds at most maxPerFlush: a tenant evaluating 100,000 flags displaces the oldest, each counted', async () => {
    const writes = new FakeWrites();
    const recorder = new EvaluationRecorder(writes, { maxPerFlush: 1000 });
    recorder.record(T2, 'production', 'early');
    for (let i = 0; i < 100_000; i++) recorder.record(T1, 'production', `flag-${i}`);
    await recorder.flush();
    expect(writes.batches).toHaveLength(1);
    expect(writes.batches[0]).toHaveLength(1000);
    expect(recorder.dropped).toBe(99_001);
    expect(keys(writes.batches[0]).slice(0, 1)).toEqual(['1/production/flag-99000']);
  });

  it('a failed write is dropped, not retried; the next window records what is still evaluated', async () => {
    const writes = new FakeWrites();
    const recorder = new EvaluationRecorder(writes, { maxPerFlush: 10, windowMs: 1000 });
    writes.failNext = true;
    recorder.record(T1, 'production', 'a');
    await jest.advanceTimersByTimeAsync(1000);
    expect(writes.batches).toEqual([]);
    await jest.advanceTimersByTimeAsync(5000);
    expect(writes.batches).toEqual([]);
    recorder.record(T1, 'production', 'a');
    await jest.advanceTimersByTimeAsync(1000);
    expect(keys(writes.batches[0])).toEqual(['1/production/a']);
  });
});
