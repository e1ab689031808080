import { type Channel, CHANNELS } from '@flagship/redis';

/** Whose access a principal is: its caller and the tenant it acts in. */
export interface AccessHolder {
  /** `user:<id>` or `client:<id>`. */
  callerId: string;
  tenantId: string;
}

/** Whom a message concerns, for one access announcement channel. */
export type Concerns<T> = (message: T) => (holder: AccessHolder) => boolean;

/** How a keeper of access decisions follows one channel (SubscribedCache.follow, PubSub.subscribe...). */
export type FollowAccess = <T>(channel: Channel<T>, concerns: Concerns<T>) => void;

/**
 * The announcements after which what was decided of a caller's access may no longer hold, in one
 * place for whatever keeps a decision (the evaluate routes' PrincipalCache, the open flag-data
 * streams): a client revocation (deletion) concerns that client; a membership change that person
 * in every tenant (their canonical tenant may change too); a tenant change (plan, a deletion)
 * everyone acting in it.
 */
export function followAccessChanges(follow: FollowAccess): void {
  follow(CHANNELS.clientRevoked, (m) => (h) => h.callerId === `client:${m.clientId}`);
  follow(CHANNELS.membershipChanged, (m) => (h) => h.callerId === `user:${m.userId}`);
  follow(CHANNELS.tenantChanged, (m) => (h) => h.tenantId === m.tenantId);
}
