import { randomUUID } from 'node:crypto';
import type { TenantRole } from '@flagship/domain';
import { TenantEntity, type Tx } from '@flagship/persistence';
import type { PageCursor } from '@flagship/service-kit';
import { UserEntity } from '../users/user.entity';
import { MembershipEntity } from './membership.entity';
import { type MemberRow, type NewTenant, type TenantChanges, TenantsRepository, type TenantWithRole } from './tenants.repository';

/**
 * In-memory twin of SqlTenantsRepository for unit tests: same contract, no I/O. It holds the users
 * the real one joins (`users`, filled by `seedUser`) and a clock (`now`, ms) that each write reads
 * and then moves on by 1 ms, as separate transactions would; so memberships keep their order.
 */
export class FakeTenantsRepository extends TenantsRepository {
  readonly tenants = new Map<string, TenantEntity>();
  readonly memberships: MembershipEntity[] = [];
  readonly users = new Map<string, UserEntity>();
  now = Date.parse('2026-01-01T00:00:00Z');

  private stamp(): Date {
    return new Date(this.now++);
  }

  /** A user as sign-up writes one (the users table, which the real one joins for members). */
  seedUser(email: string, fields: Partial<Pick<UserEntity, 'id' | 'idpSubject' | 'displayName'>> = {}): UserEntity {
    const at = this.stamp();
    const id = fields.id ?? randomUUID();
    const user = Object.assign(new UserEntity(), { id, idpSubject: `sub-${id}`, email, displayName: '', signInProvider: null, lastAccessedAt: null, createdAt: at, updatedAt: at, ...fields });
    this.users.set(id, user);
    return copy(user);
  }

  /** A tenant with the columns' defaults; for tests that need one without going through the service. */
  seedTenant(fields: Partial<NewTenant> = {}): TenantEntity {
    return this.insertTenant({ name: 'Acme', primaryEmail: 'ops@acme.test', contactName: '', isSandbox: false, sandboxExpiresAt: null, plan: 'free', createdBy: null, ...fields });
  }

  private insertTenant(t: NewTenant): TenantEntity {
    const at = this.stamp();
    const row = Object.assign(new TenantEntity(), { id: randomUUID(), subscriptionStatus: 'active', zeroRated: false, hostedProviderAllowed: false, ...t, createdAt: at, updatedAt: at });
    this.tenants.set(row.id, row);
    return copy(row);
  }

  private membership(tenantId: string, userId: string): MembershipEntity | undefined {
    return this.memberships.find((ms) => ms.tenantId === tenantId && ms.userId === userId);
  }

  private byJoining(a: MembershipEntity, b: MembershipEntity, tieBreak: (ms: MembershipEntity) => string): number {
    return a.createdAt.getTime() - b.createdAt.getTime() || (tieBreak(a) < tieBreak(b) ? -1 : tieBreak(a) > tieBreak(b) ? 1 : 0);
  }

  async findById(tenantId: string): Promise<TenantEntity | null> {
    const t = this.tenants.get(tenantId);
    return t ? copy(t) : null;
  }

  async create(_m: Tx, tenant: NewTenant): Promise<TenantEntity> {
    return this.insertTenant(tenant);
  }

  async update(tenantId: string, changes: TenantChanges): Promise<TenantEntity | null> {
    const t = this.tenants.get(tenantId);
    if (!t) return null;
    if (Object.keys(changes).length) Object.assign(t, changes, { updatedAt: this.stamp() });
    return copy(t);
  }

  async membershipWithTenant(tenantId: string, userId: string): Promise<TenantWithRole | null> {
    const ms = this.membership(tenantId, userId);
    const t = this.tenants.get(tenantId);
    return ms && t ? { tenant: copy(t), role: ms.role, joinedAt: ms.createdAt, lastAccessedAt: ms.lastAccessedAt } : null;
  }

  async addMember(_m: Tx, tenantId: string, userId: string, role: TenantRole): Promise<MembershipEntity> {
    if (this.membership(tenantId, userId)) throw Object.assign(new Error('duplicate key value violates unique constraint "memberships_pkey"'), { code: '23505' });
    if (!this.tenants.has(tenantId) || !this.users.has(userId)) throw Object.assign(new Error('insert violates a foreign key constraint'), { code: '23503' });
    const ms = Object.assign(new MembershipEntity(), { tenantId, userId, role, lastAccessedAt: null, createdAt: this.stamp() });
    this.memberships.push(ms);
    return copy(ms);
  }

  async tenantsOfUser(userId: string): Promise<TenantWithRole[]> {
    return this.memberships
      .filter((ms) => ms.userId === userId)
      .sort((a, b) => this.byJoining(a, b, (ms) => ms.tenantId))
      .map((ms) => ({ tenant: copy(this.tenants.get(ms.tenantId)!), role: ms.role, joinedAt: ms.createdAt, lastAccessedAt: ms.lastAccessedAt }));
  }

  async members(tenantId: string, limit: number, after?: PageCursor): Promise<MemberRow[]> {
    const at = after ? Date.parse(after.at) : undefined;
    return this.memberships
      .filter((ms) => ms.tenantId === tenantId)
      .filter((ms) => at === undefined || ms.createdAt.getTime() > at || (ms.createdAt.getTime() === at && ms.userId > after!.id))
      .sort((a, b) => this.byJoining(a, b, (ms) => ms.userId))
      .slice(0, limit + 1)
      .map((ms) => ({ membership: copy(ms), user: copy(this.users.get(ms.userId)!) }));
  }

  async lockMemberships(_m: Tx, tenantId: string): Promise<MembershipEntity[]> {
    return this.memberships.filter((ms) => ms.tenantId === tenantId).map(copy);
  }

  async setRole(_m: Tx, tenantId: string, userId: string, role: TenantRole): Promise<MemberRow> {
    const ms = this.membership(tenantId, userId);
    if (!ms) throw new Error(`${userId} is not a member of ${tenantId}`);
    ms.role = role;
    return { membership: copy(ms), user: copy(this.users.get(userId)!) };
  }

  async removeMember(_m: Tx, tenantId: string, userId: string): Promise<void> {
    const i = this.memberships.findIndex((ms) => ms.tenantId === tenantId && ms.userId === userId);
    if (i >= 0) this.memberships.splice(i, 1);
  }

  async touchMembership(tenantId: string, userId: string): Promise<void> {
    const ms = this.membership(tenantId, userId);
    if (ms) ms.lastAccessedAt = this.stamp();
  }

  /** Tenants the user created (what the tenants-per-user quota counts). */
  countCreatedBy(userId: string): number {
    return [...this.tenants.values()].filter((t) => t.createdBy === userId).length;
  }
}

/** Readers get copies, as rows read from a database are: changing one changes nothing stored. */
function copy<T extends object>(row: T): T {
  return Object.assign(Object.create(Object.getPrototypeOf(row) as object) as T, row);
}
