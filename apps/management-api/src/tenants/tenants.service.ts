import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Plan, Tenant, TenantRole, TenantUser, SubscriptionStatus } from '@flagship/domain';
import { APP_CONFIG } from '@flagship/config';
import { type TenantEntity, TransactionRunner, type Tx } from '@flagship/persistence';
import { ProblemException } from '@flagship/problem-details';
import { isUuid } from '@flagship/domain';
import { CHANNELS, PUBSUB, type PubSub } from '@flagship/redis';
import { decodeCursor, type CallerContext, type PageQueryDto } from '@flagship/service-kit';
import type { ManagementApiConfig } from '../env.schema';
import { Quotas } from '../quotas/quotas';
import { DomainEvents } from '../webhooks/domain-events';
import { isPendingUser, type UserEntity } from '../users/user.entity';
import type { CreateTenantDto } from './tenants.dto';
import { TenantProblems } from './tenants.errors';
import { type MemberRow, TenantsRepository } from './tenants.repository';

/** Hooks run inside the transaction that creates a tenant (the sandbox seeds its demo data here). */
export interface TenantCreatedHook {
  onTenantCreated(m: Tx, tenant: TenantEntity, creator: UserEntity): Promise<void>;
}
export const TENANT_CREATED_HOOKS = Symbol('TENANT_CREATED_HOOKS');

/** Hooks run inside the transaction in which a member stops being an admin (demoted or removed). */
export interface AdminLeftHook {
  onAdminLeft(m: Tx, tenantId: string, userId: string): Promise<unknown>;
}

export function toTenantDto(t: TenantEntity): Tenant {
  return {
    id: t.id,
    name: t.name,
    primaryEmail: t.primaryEmail,
    contactName: t.contactName,
    isSandbox: t.isSandbox,
    subscription: { plan: t.plan as Plan, status: t.subscriptionStatus as SubscriptionStatus },
    createdAt: t.createdAt.toISOString(),
  };
}

export function toTenantUserDto(r: MemberRow): TenantUser {
  return {
    userId: r.user.id,
    email: r.user.email,
    displayName: r.user.displayName,
    role: r.membership.role,
    status: isPendingUser(r.user) ? 'invited' : 'active',
    lastAccessedAt: r.membership.lastAccessedAt?.toISOString() ?? null,
    createdAt: r.membership.createdAt.toISOString(),
  };
}

@Injectable()
export class TenantsService {
  private readonly logger = new Logger('TenantsService');
  private hooks: TenantCreatedHook[] = [];
  private adminLeftHooks: AdminLeftHook[] = [];

  constructor(
    @Inject(TransactionRunner) private readonly transactions: Pick<TransactionRunner, 'run'>,
    private readonly tenants: TenantsRepository,
    @Inject(APP_CONFIG) private readonly config: Pick<ManagementApiConfig, 'SANDBOX_DAYS'>,
    @Inject(PUBSUB) private readonly pubsub: Pick<PubSub, 'publish'>,
    private readonly quotas: Quotas,
    /** Webhooks hear membership changes: recorded in the change's transaction. */
    @Inject(DomainEvents) private readonly domainEvents: Pick<DomainEvents, 'record'>,
  ) {}

  /** Features that must act when a tenant is born register here (kept out of this module's imports). */
  addCreatedHook(hook: TenantCreatedHook): void {
    this.hooks.push(hook);
  }

  /** Features that must act when someone stops being an admin (their invitations are withdrawn) register here. */
  addAdminLeftHook(hook: AdminLeftHook): void {
    this.adminLeftHooks.push(hook);
  }

  /** Tenants the caller can see: a user's memberships, or a client's own tenant. */
  async list(caller: CallerContext, user: UserEntity | undefined): Promise<Tenant[]> {
    if (caller.kind === 'client') {
      const t = caller.tenantId ? await this.tenants.findById(caller.tenantId) : null;
      return t ? [toTenantDto(t)] : [];
    }
    return (await this.tenants.tenantsOfUser(user!.id)).map((r) => toTenantDto(r.tenant));
  }

  /** A new tenant with its creator as admin, in one transaction; within the creator's quota of tenants (those they created, whatever their role in them now). */
  create(creator: UserEntity, dto: CreateTenantDto): Promise<Tenant> {
    return this.transactions.run(async (m) => {
      await this.quotas.reserve(m, 'tenants-per-user', creator.id);
      const tenant = await this.createWithAdmin(m, creator, {
        name: dto.name,
        primaryEmail: dto.primaryEmail,
        contactName: dto.contactName ?? '',
        isSandbox: dto.isSandbox ?? false,
      });
      return toTenantDto(tenant);
    });
  }

  /** Used by sign-up too: the personal tenant of a new user. */
  async createWithAdmin(
    m: Tx,
    creator: UserEntity,
    fields: { name: string; primaryEmail: string; contactName: string; isSandbox: boolean },
  ): Promise<TenantEntity> {
    const tenant = await this.tenants.create(m, {
      ...fields,
      plan: 'free',
      createdBy: creator.id,
      sandboxExpiresAt: fields.isSandbox ? new Date(Date.now() + this.config.SANDBOX_DAYS * 86_400_000) : null,
    });
    await this.tenants.addMember(m, tenant.id, creator.id, 'admin');
    for (const hook of this.hooks) await hook.onTenantCreated(m, tenant, creator);
    return tenant;
  }

  async listUsers(tenantId: string, page: PageQueryDto & { limit: number }): Promise<MemberRow[]> {
    return this.tenants.members(tenantId, page.limit, decodeCursor(page.cursor));
  }

  /**
   * A member's new role; the last admin cannot step down (409), so a tenant is never left without
   * one. Every replica hears of it, so cached callers (the evaluate routes) lose a role at once.
   */
  async changeRole(tenantId: string, userId: string, role: TenantRole): Promise<TenantUser> {
    const changed = await this.transactions.run(async (m) => {
      const was = this.checkLastAdmin(await this.tenants.lockMemberships(m, tenantId), userId, role, 'demoted');
      const dto = toTenantUserDto(await this.tenants.setRole(m, tenantId, userId, role));
      if (was === 'admin' && role !== 'admin') await this.adminLeft(m, tenantId, userId);
      await this.memberChanged(m, tenantId, { userId, action: 'role-changed', from: was, role });
      return dto;
    });
    await this.announceMembershipChanged(tenantId, userId);
    return changed;
  }

  /** Removes a member (or withdraws the invitation of someone who never signed in); never the last admin. Announced like a role change. */
  async removeUser(tenantId: string, userId: string): Promise<void> {
    await this.transactions.run(async (m) => {
      const was = this.checkLastAdmin(await this.tenants.lockMemberships(m, tenantId), userId, null, 'removed');
      await this.tenants.removeMember(m, tenantId, userId);
      if (was === 'admin') await this.adminLeft(m, tenantId, userId);
      await this.memberChanged(m, tenantId, { userId, action: 'removed', from: was, role: null });
    });
    await this.announceMembershipChanged(tenantId, userId);
  }

  /** member.updated for the tenant's webhooks, in `m` (a role change, a removal, an invitation accepted). */
  async memberChanged(m: Tx, tenantId: string, data: { userId: string; action: 'joined' | 'role-changed' | 'removed'; from: TenantRole | null; role: TenantRole | null }): Promise<void> {
    await this.domainEvents.record(m, tenantId, { type: 'member.updated', data });
  }

  private async adminLeft(m: Tx, tenantId: string, userId: string): Promise<void> {
    for (const hook of this.adminLeftHooks) await hook.onAdminLeft(m, tenantId, userId);
  }

  /** The member's role before the change; 404 when not a member, 409 when it would leave no admin. */
  private checkLastAdmin(members: { userId: string; role: TenantRole }[], userId: string, next: TenantRole | null, verb: string): TenantRole {
    const target = isUuid(userId) ? members.find((ms) => ms.userId === userId) : undefined;
    if (!target) throw new ProblemException(TenantProblems['member-not-found'], `User ${userId} is not a member of this tenant.`);
    if (target.role === 'admin' && next !== 'admin' && members.filter((ms) => ms.role === 'admin').length === 1) {
      throw new ProblemException(TenantProblems['last-admin'], `This is the tenant's only admin and cannot be ${verb}; make another member admin first.`);
    }
    return target.role;
  }

  /**
   * Tells every replica that this person's access to the tenant changed, so what they cached of it
   * (the evaluate routes' callers) goes at once. The change is committed either way: a lost
   * message only delays it until the cache's TTL (EVALUATE_CALLER_CACHE_MS).
   */
  async announceMembershipChanged(tenantId: string, userId: string): Promise<void> {
    await this.pubsub.publish(CHANNELS.membershipChanged, { tenantId, userId }).catch((err: Error) => {
      this.logger.warn({ err, tenantId, userId }, 'membership change saved but not announced; replicas see it when their cached callers expire');
    });
  }
}
