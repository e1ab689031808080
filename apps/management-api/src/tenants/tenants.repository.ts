import { Inject, Injectable } from '@nestjs/common';
import type { DataSource, EntityManager } from 'typeorm';
import type { TenantRole } from '@flagship/domain';
import { isUuid } from '@flagship/domain';
import { DATA_SOURCE, TenantEntity } from '@flagship/persistence';
import type { PageCursor } from '@flagship/service-kit';
import { UserEntity } from '../users/user.entity';
import { MembershipEntity } from './membership.entity';

export interface TenantWithRole {
  tenant: TenantEntity;
  role: TenantRole;
  joinedAt: Date;
  /** When the member last acted in this tenant (touched at most once a minute), or null. */
  lastAccessedAt: Date | null;
}

export interface MemberRow {
  user: UserEntity;
  membership: MembershipEntity;
}

/** The columns a new tenant is created with; the rest take their defaults. */
export type NewTenant = Pick<TenantEntity, 'name' | 'primaryEmail' | 'contactName' | 'isSandbox' | 'sandboxExpiresAt' | 'plan' | 'createdBy'>;
/** What platform admins and billing change of a tenant. */
export type TenantChanges = Partial<Pick<TenantEntity, 'zeroRated' | 'hostedProviderAllowed' | 'plan' | 'subscriptionStatus'>>;

/**
 * Tenants and memberships. Tenant-owned reads take the tenant id first; a malformed tenant id names
 * no tenant (null, never a uuid cast error). Memberships are ordered by when they began, then by id.
 */
export abstract class TenantsRepository {
  /** A malformed id names no tenant (and must not reach Postgres as a uuid cast error). */
  static isTenantId(id: string): boolean {
    return isUuid(id);
  }

  abstract findById(tenantId: string, m?: EntityManager): Promise<TenantEntity | null>;
  abstract create(m: EntityManager, tenant: NewTenant): Promise<TenantEntity>;
  /** The tenant after the change; null when there is no such tenant. */
  abstract update(tenantId: string, changes: TenantChanges): Promise<TenantEntity | null>;
  /** The membership and its tenant in one read (the authorization guard's, on every request). */
  abstract membershipWithTenant(tenantId: string, userId: string): Promise<TenantWithRole | null>;
  /** Inserts (never upserts): an existing membership is a unique violation. */
  abstract addMember(m: EntityManager, tenantId: string, userId: string, role: TenantRole): Promise<MembershipEntity>;
  /** The user's tenants, oldest membership first. */
  abstract tenantsOfUser(userId: string, m?: EntityManager): Promise<TenantWithRole[]>;
  /** Members of one tenant after the cursor, keyset-paginated by (membership created_at, user id): up to `limit + 1` rows, the last telling there is more. */
  abstract members(tenantId: string, limit: number, after?: PageCursor): Promise<MemberRow[]>;
  /** Every membership of the tenant, locked until the transaction ends: role changes see a stable admin count. */
  abstract lockMemberships(m: EntityManager, tenantId: string): Promise<MembershipEntity[]>;
  /** Sets a member's role (the caller checked they are one); the member after it. */
  abstract setRole(m: EntityManager, tenantId: string, userId: string, role: TenantRole): Promise<MemberRow>;
  abstract removeMember(m: EntityManager, tenantId: string, userId: string): Promise<void>;
  /** The member's last access in the tenant is now. */
  abstract touchMembership(tenantId: string, userId: string): Promise<void>;
}

@Injectable()
export class SqlTenantsRepository extends TenantsRepository {
  constructor(@Inject(DATA_SOURCE) private readonly ds: DataSource) {
    super();
  }

  findById(tenantId: string, m?: EntityManager): Promise<TenantEntity | null> {
    if (!TenantsRepository.isTenantId(tenantId)) return Promise.resolve(null);
    return (m ?? this.ds.manager).getRepository(TenantEntity).findOneBy({ id: tenantId });
  }

  create(m: EntityManager, tenant: NewTenant): Promise<TenantEntity> {
    const repo = m.getRepository(TenantEntity);
    return repo.save(repo.create(tenant));
  }

  async update(tenantId: string, changes: TenantChanges): Promise<TenantEntity | null> {
    if (!TenantsRepository.isTenantId(tenantId)) return null;
    if (Object.keys(changes).length) await this.ds.getRepository(TenantEntity).update({ id: tenantId }, changes);
    return this.findById(tenantId);
  }

  async membershipWithTenant(tenantId: string, userId: string): Promise<TenantWithRole | null> {
    if (!TenantsRepository.isTenantId(tenantId)) return null;
    // Plain SQL: this runs on every tenant-scoped request (see tools/bench/evaluate-endpoint.ts).
    const rows: Array<Record<string, unknown>> = await this.ds.query(
      `SELECT ms.role, ms.created_at AS joined_at, ms.last_accessed_at AS member_last_accessed_at, t.id, t.name, t.primary_email, t.contact_name, t.is_sandbox, t.sandbox_expires_at,
              t.plan, t.subscription_status, t.zero_rated, t.hosted_provider_allowed, t.created_by, t.created_at, t.updated_at
       FROM memberships ms JOIN tenants t ON t.id = ms.tenant_id
       WHERE ms.tenant_id = $1 AND ms.user_id = $2`,
      [tenantId, userId],
    );
    if (!rows.length) return null;
    const r = rows[0];
    const tenant = Object.assign(new TenantEntity(), {
      id: r['id'] as string,
      name: r['name'] as string,
      primaryEmail: r['primary_email'] as string,
      contactName: r['contact_name'] as string,
      isSandbox: r['is_sandbox'] as boolean,
      sandboxExpiresAt: (r['sandbox_expires_at'] as Date | null) ?? null,
      plan: r['plan'] as string,
      subscriptionStatus: r['subscription_status'] as string,
      zeroRated: r['zero_rated'] as boolean,
      hostedProviderAllowed: r['hosted_provider_allowed'] as boolean,
      createdBy: (r['created_by'] as string | null) ?? null,
      createdAt: r['created_at'] as Date,
      updatedAt: r['updated_at'] as Date,
    });
    return { tenant, role: r['role'] as TenantRole, joinedAt: r['joined_at'] as Date, lastAccessedAt: (r['member_last_accessed_at'] as Date | null) ?? null };
  }

  async addMember(m: EntityManager, tenantId: string, userId: string, role: TenantRole): Promise<MembershipEntity> {
    const repo = m.getRepository(MembershipEntity);
    await repo.insert({ tenantId, userId, role });
    return (await repo.findOneBy({ tenantId, userId }))!;
  }

  async tenantsOfUser(userId: string, m?: EntityManager): Promise<TenantWithRole[]> {
    const rows = await (m ?? this.ds.manager)
      .getRepository(MembershipEntity)
      .createQueryBuilder('ms')
      .innerJoinAndMapOne('ms.tenant', TenantEntity, 't', 't.id = ms.tenant_id')
      .where('ms.user_id = :userId', { userId })
      .orderBy('ms.created_at', 'ASC')
      .addOrderBy('ms.tenant_id', 'ASC')
      .getMany();
    return rows.map((r) => ({ tenant: (r as MembershipEntity & { tenant: TenantEntity }).tenant, role: r.role, joinedAt: r.createdAt, lastAccessedAt: r.lastAccessedAt }));
  }

  async members(tenantId: string, limit: number, after?: PageCursor): Promise<MemberRow[]> {
    const q = this.ds
      .getRepository(MembershipEntity)
      .createQueryBuilder('ms')
      .innerJoinAndMapOne('ms.user', UserEntity, 'u', 'u.id = ms.user_id')
      .where('ms.tenant_id = :tenantId', { tenantId })
      .orderBy('ms.created_at', 'ASC')
      .addOrderBy('ms.user_id', 'ASC')
      .limit(limit + 1);
    if (after) q.andWhere('(ms.created_at, ms.user_id) > (:at, :id)', { at: after.at, id: after.id });
    const rows = await q.getMany();
    return rows.map((r) => ({ membership: r, user: (r as MembershipEntity & { user: UserEntity }).user }));
  }

  async lockMemberships(m: EntityManager, tenantId: string): Promise<MembershipEntity[]> {
    return m.getRepository(MembershipEntity).createQueryBuilder('ms').where('ms.tenant_id = :tenantId', { tenantId }).setLock('pessimistic_write').getMany();
  }

  async setRole(m: EntityManager, tenantId: string, userId: string, role: TenantRole): Promise<MemberRow> {
    await m.getRepository(MembershipEntity).update({ tenantId, userId }, { role });
    const membership = (await m.getRepository(MembershipEntity).findOneBy({ tenantId, userId }))!;
    const user = (await m.getRepository(UserEntity).findOneBy({ id: userId }))!;
    return { membership, user };
  }

  async removeMember(m: EntityManager, tenantId: string, userId: string): Promise<void> {
    await m.getRepository(MembershipEntity).delete({ tenantId, userId });
  }

  async touchMembership(tenantId: string, userId: string): Promise<void> {
    await this.ds.getRepository(MembershipEntity).update({ tenantId, userId }, { lastAccessedAt: new Date() });
  }
}
