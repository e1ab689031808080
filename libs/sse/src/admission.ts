/**
 * One bound on the streams a process holds: they are counted per key, and one more past `limit` is
 * refused, unless `giveWay` names a held stream to end in its place.
 */
export interface AdmissionBound<S> {
  /** Named in a refusal, and in `Admission.count`. */
  readonly name: string;
  /** The count `s` is held against; undefined when this bound does not apply to it. Read once, at admission. */
  key(s: S): string | undefined;
  /** How many streams of one key may be held, as `s` asks (its plan may decide). */
  limit(s: S): number;
  /** At the limit: a stream held under the same key (oldest first) to end in `s`'s place, or none to refuse `s`. */
  giveWay?(s: S, held: Iterable<S>): S | undefined;
}

/** `shed`: admitted in place of that one, which no longer counts; its holder ends it. */
export type AdmissionDecision<S> = { admitted: true; shed?: S } | { admitted: false; bound: string; limit: number };

/**
 * Which stream a process takes, by rules with no I/O: each bound in the order given, the first one
 * reached refusing (or giving way once). A stream is counted from the moment it is admitted, so
 * concurrent opens cannot all pass a bound, until it is released.
 */
export class Admission<S> {
  /** Each held stream with the counts it holds, in the order admitted (the newest last). */
  private readonly held = new Map<S, string[]>();
  private readonly counts = new Map<string, number>();

  constructor(private readonly bounds: readonly AdmissionBound<S>[]) {}

  get size(): number {
    return this.held.size;
  }

  /** Streams held under `bound` for `key`. */
  count(bound: string, key: string): number {
    return this.counts.get(countKey(bound, key)) ?? 0;
  }

  /** Held streams, oldest first. */
  streams(): IterableIterator<S> {
    return this.held.keys();
  }

  has(s: S): boolean {
    return this.held.has(s);
  }

  admit(s: S): AdmissionDecision<S> {
    const keys: string[] = [];
    let shed: S | undefined;
    for (const bound of this.bounds) {
      const key = bound.key(s);
      if (key === undefined) continue;
      const counted = countKey(bound.name, key);
      const limit = bound.limit(s);
      if ((this.counts.get(counted) ?? 0) >= limit) {
        const victim = shed === undefined ? bound.giveWay?.(s, this.heldUnder(counted)) : undefined;
        if (victim === undefined) return { admitted: false, bound: bound.name, limit };
        shed = victim;
      }
      keys.push(counted);
    }
    if (shed !== undefined) this.release(shed);
    this.held.set(s, keys);
    for (const k of keys) this.counts.set(k, (this.counts.get(k) ?? 0) + 1);
    return shed === undefined ? { admitted: true } : { admitted: true, shed };
  }

  /** `s` no longer counts; false when it did not (a second call, or never admitted). */
  release(s: S): boolean {
    const keys = this.held.get(s);
    if (keys === undefined) return false;
    this.held.delete(s);
    for (const k of keys) {
      const n = (this.counts.get(k) ?? 1) - 1;
      if (n <= 0) this.counts.delete(k);
      else this.counts.set(k, n);
    }
    return true;
  }

  private *heldUnder(counted: string): IterableIterator<S> {
    for (const [s, keys] of this.held) if (keys.includes(counted)) yield s;
  }
}

const countKey = (bound: string, key: string) => `${bound}\n${key}`;
