/**
 * How a usage read over `[from, to)` is split between the ledger's rows and its rollups
 * (docs/decisions/2026-11-29-usage-rollups.md): rollups hold whole UTC hours (hourly) and days (daily)
 * of completed rows, so the partial hours at the ends are read from rows, and the whole hours between
 * from rollups: whole days from daily rows, the hours around them from hourly rows. Every instant of
 * `[from, to)` falls in exactly one piece (usage-rollup-plan.spec.ts). Bounds left undefined are open.
 */
export interface Span {
  /** Inclusive; undefined: unbounded. */
  from?: Date;
  /** Exclusive; undefined: unbounded. */
  to?: Date;
}

export interface RollupPlan {
  /** Partial hours at the ends (at most two): ledger rows of every status. */
  rows: Span[];
  /**
   * The whole hours between (undefined when none): rollups, plus the rows still pending there (a
   * pending row is in no rollup), plus the deltas of completions not yet compacted.
   */
  rolled?: Span;
  /** Of `rolled`, what hourly rows answer (at most two spans, around `days`). */
  hours: Span[];
  /** Of `rolled`, the whole UTC days daily rows answer. */
  days?: Span;
}

export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

const floorTo = (ms: number, unit: number): number => Math.floor(ms / unit) * unit;
const ceilTo = (ms: number, unit: number): number => Math.ceil(ms / unit) * unit;
const date = (ms: number): Date | undefined => (Number.isFinite(ms) ? new Date(ms) : undefined);

/** The UTC hour (or day) a row created at `at` counts in, as the settlement statements truncate it. */
export const bucketOf = (at: Date, unit: number = HOUR_MS): Date => new Date(floorTo(at.getTime(), unit));

export function planRollupRead(from?: Date, to?: Date): RollupPlan {
  const lo = from?.getTime() ?? -Infinity;
  const hi = to?.getTime() ?? Infinity;
  if (lo >= hi) return { rows: [], hours: [] };
  const hLo = Number.isFinite(lo) ? ceilTo(lo, HOUR_MS) : lo;
  const hHi = Number.isFinite(hi) ? floorTo(hi, HOUR_MS) : hi;
  if (hLo >= hHi) return { rows: [{ from, to }], hours: [] };
  const rows: Span[] = [];
  if (lo < hLo) rows.push({ from, to: date(hLo) });
  if (hHi < hi) rows.push({ from: date(hHi), to });
  const rolled = { from: date(hLo), to: date(hHi) };
  const dLo = Number.isFinite(hLo) ? ceilTo(hLo, DAY_MS) : hLo;
  const dHi = Number.isFinite(hHi) ? floorTo(hHi, DAY_MS) : hHi;
  if (dLo >= dHi) return { rows, rolled, hours: [rolled] };
  const hours: Span[] = [];
  if (hLo < dLo) hours.push({ from: date(hLo), to: date(dLo) });
  if (dHi < hHi) hours.push({ from: date(dHi), to: date(hHi) });
  return { rows, rolled, hours, days: { from: date(dLo), to: date(dHi) } };
}

/** Whether `span` holds the instant `ms`. */
export const spanHolds = (span: Span, ms: number): boolean => (span.from === undefined || span.from.getTime() <= ms) && (span.to === undefined || ms < span.to.getTime());
