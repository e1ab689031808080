import type { RateLimitDecision, RateLimitSubject } from '@flagship/request-policies';

/** Subjects whose last answer is kept; the least recently added goes past this. */
const MAX_VIEWS = 10_000;

interface View {
  /** Requests left after the last request Redis answered (its sliding-window count, all replicas'). */
  remaining: number;
  /** Its window's reset, in ms from `at`. */
  resetMs: number;
  limit: number;
  windowMs: number;
  /** When Redis answered it; 0: no usable answer (none yet, or Redis away). */
  at: number;
  /** Requests sent to Redis and not answered yet. */
  inFlight: number;
}

/**
 * The tenant's rate limit on the evaluate routes without waiting for Redis while the budget clearly
 * has room. Every request is still counted in Redis, in the batch of its event-loop turn, in the
 * budget every replica shares; what changes is who waits for the answer. A request is answered at
 * once when the last answer of Redis for its subject is fresh (`freshMs`) and leaves room after the
 * requests still being counted; otherwise (the first request, an old answer, a budget nearly spent, a
 * new window, Redis away) it waits for its own answer as before, so refusals and their Retry-After
 * are always Redis' own. Under load the Redis round trip (a pipeline of the turn's requests) was
 * most of an evaluation's latency and all of its tail when Redis waited for a core. The cost: the
 * budget can be overspent by the requests in flight when it runs out (on each replica, what it
 * sends in one round trip), and RateLimit-Remaining is this replica's estimate until Redis answers.
 */
export class RateLimitAhead {
  private readonly views = new Map<string, View>();

  constructor(
    /** Counts one request in Redis (batched per turn); undefined when Redis is away (served uncounted). */
    private readonly count: (subject: RateLimitSubject) => Promise<RateLimitDecision | undefined>,
    private readonly freshMs = 1000,
  ) {}

  decide(subject: RateLimitSubject): RateLimitDecision | Promise<RateLimitDecision | undefined> {
    let v = this.views.get(subject.key);
    if (v === undefined) {
      v = { remaining: 0, resetMs: 0, limit: subject.limit, windowMs: 0, at: 0, inFlight: 0 };
      if (this.views.size >= MAX_VIEWS) this.views.delete(this.views.keys().next().value!);
      this.views.set(subject.key, v);
    }
    const age = Date.now() - v.at;
    const left = v.remaining - v.inFlight;
    const ahead = v.at > 0 && age < this.freshMs && age < v.resetMs && left > 0 && v.limit === subject.limit;
    const counted = this.send(subject, v);
    if (!ahead) return counted;
    counted.catch(() => undefined);
    return { allowed: true, limit: v.limit, windowMs: v.windowMs, remaining: left - 1, resetMs: v.resetMs - age, retryAfterMs: 0 };
  }

  private send(subject: RateLimitSubject, v: View): Promise<RateLimitDecision | undefined> {
    v.inFlight++;
    return this.count(subject).then(
      (d) => {
        v.inFlight--;
        // Redis answers a subject's requests in the order they were sent: the last answer counts all before it.
        if (d === undefined) v.at = 0;
        else Object.assign(v, { remaining: d.remaining, resetMs: d.resetMs, limit: d.limit, windowMs: d.windowMs, at: Date.now() });
        return d;
      },
      (err: unknown) => {
        v.inFlight--;
        v.at = 0;
        throw err;
      },
    );
  }
}
