import type { Plan } from '@flagship/domain';
import type { AdmissionBound } from '@flagship/sse';

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

const isUser = (s: AdmittedStream) => s.callerId.startsWith('user:');

/**
 * Who may open one more flag-data stream on this process, and at whose expense when it is full:
 * rules with no I/O, for the SSE kit's Admission (checked in this order, the first reached refusing).
 *
 * - Each tenant has its plan's allowance; each person and each OAuth client a bound across tenants
 *   (tenants are free to create, so a per-tenant bound alone lets one person take every slot);
 *   each client network (an IPv6 /64 counts as one) a bound across tenants and callers.
 * - A full process refuses a free-plan stream. A paid-plan (standard, premium) one is admitted in
 *   place of the newest free-plan stream held: the newest because the streams of a flood are the
 *   latest, while a long-held stream is a working application's. With no free-plan stream to
 *   shed, a paid one is refused too.
 */
export function flagStreamBounds<S extends AdmittedStream>(limits: FlagStreamLimits): Array<AdmissionBound<S> & { name: StreamBound }> {
  return [
    { name: 'tenant', key: (s) => s.tenantId, limit: (s) => limits.perTenant[s.plan] },
    { name: 'user', key: (s) => (isUser(s) ? s.callerId : undefined), limit: () => limits.perUser },
    { name: 'client', key: (s) => (isUser(s) ? undefined : s.callerId), limit: () => limits.perClient },
    { name: 'address', key: (s) => s.address, limit: () => limits.perAddress },
    { name: 'process', key: () => '', limit: () => limits.perProcess, giveWay: (s, held) => (s.plan === 'free' ? undefined : newestFree(held)) },
  ];
}

function newestFree<S extends AdmittedStream>(held: Iterable<S>): S | undefined {
  let newest: S | undefined;
  for (const s of held) if (s.plan === 'free') newest = s;
  return newest;
}
