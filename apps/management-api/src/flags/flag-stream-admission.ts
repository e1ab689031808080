import type { Plan } from '@flagship/domain';

/** The bounds of one process's flag-data streams (FLAG_STREAMS_* in env.schema.ts). */
export interface FlagStreamLimits {
  /** Streams one tenant may hold, by its plan: its stream allowance. */
  perTenant: Readonly<Record<Plan, number>>;
  /** Streams one person (ID token) may hold, across every tenant they belong to. */
  perUser: number;
  /** Streams one OAuth client may hold (it acts in one tenant only). */
  perClient: number;
  /** Streams from one client network (addressBucket: an IPv4 address, an IPv6 /64), across tenants. */
  perAddress: number;
  /** Streams in all. */
  perProcess: number;
}

/** What admission reads of a stream. `plan` may change while it is held (the tenant's plan changed). */
export interface AdmittedStream {
  tenantId: string;
  plan: Plan;
  /** `user:<id>` or `client:<id>`. */
  callerId: string;
  /** addressBucket of the client's address. */
  address: string;
}

/** Which bound refused a stream: the tenant's allowance, the caller's, the address's (429), or the process (503). */
export type StreamBound = 'tenant' | 'user' | 'client' | 'address' | 'process';

export type AdmissionDecision<S> = { admitted: true; shed?: S } | { admitted: false; bound: StreamBound; limit: number };

/**
 * Who may open one more flag-data stream on this process, and at whose expense when it is full.
 * A rule piece with no I/O: FlagStreams asks it and ends what it says to shed.
 *
 * - Each tenant has its plan's allowance; each person and each OAuth client a bound across tenants
 *   (tenants are free to create, so a per-tenant bound alone lets one person take every slot);
 *   each client network (an IPv6 /64 counts as one) a bound across tenants and callers.
 * - A full process refuses a free-plan stream. A paid-plan (standard, premium) one is admitted in
 *   place of the newest free-plan stream held: the newest because the streams of a flood are the
 *   latest, while a long-held stream is a working application's. With no free-plan stream to
 *   shed, a paid one is refused too.
 */
export class FlagStreamAdmission<S extends AdmittedStream> {
  /** In the order admitted: the newest last. */
  private readonly held = new Set<S>();
  private readonly counts = new Map<string, number>();

  constructor(private readonly limits: FlagStreamLimits) {}

  get size(): number {
    return this.held.size;
  }

  /** Streams held by a tenant. */
  heldBy(tenantId: string): number {
    return this.counts.get(tenantKey(tenantId)) ?? 0;
  }

  streams(): IterableIterator<S> {
    return this.held.values();
  }

  /**
   * Admits `s` (counted at once, so concurrent opens cannot all pass a bound) or says which bound
   * refused it. When it is admitted in place of another, that one (`shed`) is no longer counted:
   * the caller ends it.
   */
  admit(s: S): AdmissionDecision<S> {
    const user = s.callerId.startsWith('user:');
    const bounds: Array<[StreamBound, string, number]> = [
      ['tenant', tenantKey(s.tenantId), this.limits.perTenant[s.plan]],
      [user ? 'user' : 'client', s.callerId, user ? this.limits.perUser : this.limits.perClient],
      ['address', addressKey(s.address), this.limits.perAddress],
    ];
    for (const [bound, key, limit] of bounds) {
      if ((this.counts.get(key) ?? 0) >= limit) return { admitted: false, bound, limit };
    }
    let shed: S | undefined;
    if (this.held.size >= this.limits.perProcess) {
      shed = s.plan === 'free' ? undefined : this.newestFree();
      if (shed === undefined) return { admitted: false, bound: 'process', limit: this.limits.perProcess };
      this.release(shed);
    }
    this.held.add(s);
    for (const [, key] of bounds) this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    return shed === undefined ? { admitted: true } : { admitted: true, shed };
  }

  /** `s` no longer counts (closed, ended, shed); a second call does nothing. */
  release(s: S): void {
    if (!this.held.delete(s)) return;
    for (const key of [tenantKey(s.tenantId), s.callerId, addressKey(s.address)]) {
      const n = (this.counts.get(key) ?? 1) - 1;
      if (n <= 0) this.counts.delete(key);
      else this.counts.set(key, n);
    }
  }

  private newestFree(): S | undefined {
    let newest: S | undefined;
    for (const s of this.held) if (s.plan === 'free') newest = s;
    return newest;
  }
}

const tenantKey = (tenantId: string) => `tenant:${tenantId}`;
const addressKey = (address: string) => `address:${address}`;
