import { seededRandom } from '@flagship/testing';
import { bucketOf, DAY_MS, HOUR_MS, planRollupRead, type Span, spanHolds } from './usage-rollup-plan';

const at = (iso: string) => new Date(iso);
const aligned = (s: Span, unit: number) => [s.from, s.to].every((d) => d === undefined || d.getTime() % unit === 0);

describe('planRollupRead', () => {
  it('reads a range inside one hour from rows alone', () => {
    expect(planRollupRead(at('2026-11-01T10:05:00Z'), at('2026-11-01T10:55:00Z'))).toEqual({
      rows: [{ from: at('2026-11-01T10:05:00Z'), to: at('2026-11-01T10:55:00Z') }],
      hours: [],
    });
  });

  it('reads partial hours from rows, whole hours from hourly rows and whole days from daily rows', () => {
    expect(planRollupRead(at('2026-11-01T22:30:00Z'), at('2026-11-04T01:15:00Z'))).toEqual({
      rows: [
        { from: at('2026-11-01T22:30:00Z'), to: at('2026-11-01T23:00:00Z') },
        { from: at('2026-11-04T01:00:00Z'), to: at('2026-11-04T01:15:00Z') },
      ],
      rolled: { from: at('2026-11-01T23:00:00Z'), to: at('2026-11-04T01:00:00Z') },
      hours: [
        { from: at('2026-11-01T23:00:00Z'), to: at('2026-11-02T00:00:00Z') },
        { from: at('2026-11-04T00:00:00Z'), to: at('2026-11-04T01:00:00Z') },
      ],
      days: { from: at('2026-11-02T00:00:00Z'), to: at('2026-11-04T00:00:00Z') },
    });
  });

  it('reads everything from daily rows when unbounded, and nothing from an empty range', () => {
    expect(planRollupRead()).toEqual({ rows: [], rolled: { from: undefined, to: undefined }, hours: [], days: { from: undefined, to: undefined } });
    expect(planRollupRead(at('2026-11-01T10:00:00Z'), at('2026-11-01T10:00:00Z'))).toEqual({ rows: [], hours: [] });
  });

  it('puts a row created on an hour boundary in the hour it opens', () => {
    expect(bucketOf(at('2026-11-01T10:00:00.000Z'))).toEqual(at('2026-11-01T10:00:00Z'));
    expect(bucketOf(at('2026-11-01T10:59:59.999Z'))).toEqual(at('2026-11-01T10:00:00Z'));
    expect(bucketOf(at('2026-11-01T10:59:59.999Z'), DAY_MS)).toEqual(at('2026-11-01T00:00:00Z'));
  });

  // The property the summary's exactness rests on: every instant of [from, to) is read once, from
  // rows or from a rollup whose whole bucket lies inside the range; none outside it is read.
  it('covers every instant of the range exactly once, with aligned buckets (random ranges)', () => {
    const rnd = seededRandom(35);
    const base = Date.UTC(2026, 0, 1);
    const instant = () => base + Math.floor(rnd() * 6 * DAY_MS);
    const wrong: string[] = [];
    const check = (ok: boolean, what: string) => {
      if (!ok && wrong.length < 5) wrong.push(what);
    };
    for (let i = 0; i < 1000; i++) {
      const a = rnd() < 0.1 ? undefined : instant();
      const b = rnd() < 0.1 ? undefined : instant();
      const [lo, hi] = a !== undefined && b !== undefined && a > b ? [b, a] : [a, b];
      const plan = planRollupRead(lo === undefined ? undefined : new Date(lo), hi === undefined ? undefined : new Date(hi));
      const what = `[${lo}, ${hi})`;
      check(plan.hours.every((h) => aligned(h, HOUR_MS)) && (plan.days === undefined || aligned(plan.days, DAY_MS)), `${what}: unaligned bucket`);
      for (let k = 0; k < 50; k++) {
        // Near the ends and bucket edges as often as anywhere.
        const t = k % 2 === 0 ? instant() : Math.floor(instant() / HOUR_MS) * HOUR_MS + (k % 4 === 1 ? 0 : -1);
        const inRange = (lo === undefined || lo <= t) && (hi === undefined || t < hi);
        const fromRows = plan.rows.filter((s) => spanHolds(s, t)).length;
        const fromRolled = plan.rolled && spanHolds(plan.rolled, t) ? 1 : 0;
        const fromBuckets = plan.hours.filter((s) => spanHolds(s, t)).length + (plan.days && spanHolds(plan.days, t) ? 1 : 0);
        check(fromRows + fromRolled === (inRange ? 1 : 0), `${what}: ${t} read ${fromRows + fromRolled} times`);
        check(fromBuckets === fromRolled, `${what}: ${t} in ${fromBuckets} buckets`);
        // A rolled-up instant's whole hour is inside the range (so every row of its bucket is wanted).
        if (fromRolled) {
          const hour = Math.floor(t / HOUR_MS) * HOUR_MS;
          check((lo === undefined || lo <= hour) && (hi === undefined || hour + HOUR_MS <= hi), `${what}: ${t}'s hour not inside`);
        }
      }
    }
    expect(wrong).toEqual([]);
  });
});
