/** The flags list's lifecycle filter (CONTRACT.md section 10). */
export const FLAG_LIFECYCLES = ['stale', 'active'] as const;
export type FlagLifecycle = (typeof FLAG_LIFECYCLES)[number];

/** A lifecycle filter with its moment: a flag is stale when quiet or fully rolled out since before `cutoff`. */
export interface LifecycleFilter {
  lifecycle: FlagLifecycle;
  cutoff: Date;
}

const DAY_MS = 24 * 60 * 60 * 1000;

/** The filter a list request asks for (none without `lifecycle`); `staleAfterDays` falls back to STALE_AFTER_DAYS. */
export function lifecycleFilter(lifecycle: FlagLifecycle | undefined, staleAfterDays: number | undefined, defaultDays: number, now: Date): LifecycleFilter | undefined {
  if (lifecycle === undefined) return undefined;
  return { lifecycle, cutoff: new Date(now.getTime() - (staleAfterDays ?? defaultDays) * DAY_MS) };
}

/**
 * Stale: not evaluated since the cutoff (a flag never evaluated counts from its creation, so a new
 * flag has the whole period to be used), or serving one value to everyone since before it. The SQL
 * of SqlFlagsRepository.list says the same; the agreement spec holds them together.
 */
export function isStale(f: { createdAt: Date; lastEvaluatedAt: Date | null; servingOneVariationSince: Date | null }, cutoff: Date): boolean {
  const quietSince = f.lastEvaluatedAt ?? f.createdAt;
  return quietSince < cutoff || (f.servingOneVariationSince !== null && f.servingOneVariationSince < cutoff);
}

export function matchesLifecycle(f: Parameters<typeof isStale>[0], filter: LifecycleFilter | undefined): boolean {
  return filter === undefined || isStale(f, filter.cutoff) === (filter.lifecycle === 'stale');
}
