import { isStale, lifecycleFilter, matchesLifecycle } from './flag-lifecycle';

const now = new Date('2026-06-30T00:00:00Z');
const daysAgo = (n: number) => new Date(now.getTime() - n * 86_400_000);

describe('flag lifecycle', () => {
  const cutoff = daysAgo(30);

  it('a flag evaluated within the period and serving several values is active', () => {
    expect(isStale({ createdAt: daysAgo(400), lastEvaluatedAt: daysAgo(1), servingOneVariationSince: null }, cutoff)).toBe(false);
  });

  it('a flag not evaluated since before the cutoff is stale; never evaluated counts from its creation', () => {
    expect(isStale({ createdAt: daysAgo(400), lastEvaluatedAt: daysAgo(31), servingOneVariationSince: null }, cutoff)).toBe(true);
    expect(isStale({ createdAt: daysAgo(31), lastEvaluatedAt: null, servingOneVariationSince: null }, cutoff)).toBe(true);
    expect(isStale({ createdAt: daysAgo(2), lastEvaluatedAt: null, servingOneVariationSince: null }, cutoff)).toBe(false);
  });

  it('a flag evaluated every day but serving one value to everyone since before the cutoff is stale', () => {
    expect(isStale({ createdAt: daysAgo(400), lastEvaluatedAt: daysAgo(0), servingOneVariationSince: daysAgo(45) }, cutoff)).toBe(true);
    expect(isStale({ createdAt: daysAgo(400), lastEvaluatedAt: daysAgo(0), servingOneVariationSince: daysAgo(10) }, cutoff)).toBe(false);
  });

  it('the filter takes the request days, else the default; active is the complement of stale', () => {
    expect(lifecycleFilter(undefined, 7, 30, now)).toBeUndefined();
    expect(lifecycleFilter('stale', undefined, 30, now)).toEqual({ lifecycle: 'stale', cutoff });
    expect(lifecycleFilter('active', 7, 30, now)).toEqual({ lifecycle: 'active', cutoff: daysAgo(7) });
    const quiet = { createdAt: daysAgo(400), lastEvaluatedAt: daysAgo(60), servingOneVariationSince: null };
    expect(matchesLifecycle(quiet, { lifecycle: 'stale', cutoff })).toBe(true);
    expect(matchesLifecycle(quiet, { lifecycle: 'active', cutoff })).toBe(false);
    expect(matchesLifecycle(quiet, undefined)).toBe(true);
  });
});
