import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import type { TenantRole } from '@flagship/domain';
import { APP_CONFIG } from '@flagship/config';
import { TransactionRunner, type Tx } from '@flagship/persistence';
import { ProblemException } from '@flagship/problem-details';
import type { VerifiedEmail } from '../auth/auth.decorators';
import { AuthProblems } from '../auth/auth.errors';
import type { ManagementApiConfig } from '../env.schema';
import { Quotas } from '../quotas/quotas';
import type { UserEntity } from '../users/user.entity';
import type { AddTenantUserDto, InvitationDto } from './tenants.dto';
import { TenantProblems } from './tenants.errors';
import { type InvitationRow, InvitationsRepository } from './invitations.repository';
import { TenantsService } from './tenants.service';

export function toInvitationDto(r: InvitationRow): InvitationDto {
  return {
    id: r.id,
    tenantId: r.tenantId,
    tenantName: r.tenantName,
    email: r.email,
    role: r.role,
    status: r.status,
    createdAt: r.createdAt.toISOString(),
    expiresAt: r.expiresAt.toISOString(),
    respondedAt: r.respondedAt?.toISOString() ?? null,
  };
}

const DAY_MS = 86_400_000;

/**
 * Adding someone to a tenant by e-mail invites them: nothing changes for the invitee until they,
 * signed in with that e-mail verified by their identity provider, accept.
 *
 * - The inviter's request does the same work whether or not the e-mail has an account (one lookup
 *   of the tenant's members by e-mail, then always the write), so neither its answer nor its timing
 *   tells who is signed up.
 * - An invitation expires INVITATION_TTL_DAYS after it was sent (re-inviting renews it), and is
 *   withdrawn when its inviter stops being an admin of the tenant (demoted or removed).
 * - A tenant holds at most QUOTA_INVITATIONS_PER_TENANT pending invitations.
 */
@Injectable()
export class InvitationsService implements OnModuleInit {
  private readonly ttlMs: number;

  constructor(
    @Inject(TransactionRunner) private readonly transactions: Pick<TransactionRunner, 'run'>,
    private readonly invitations: InvitationsRepository,
    private readonly quotas: Quotas,
    @Inject(TenantsService) private readonly members: Pick<TenantsService, 'announceMembershipChanged' | 'addAdminLeftHook' | 'memberChanged'>,
    @Inject(APP_CONFIG) config: Pick<ManagementApiConfig, 'INVITATION_TTL_DAYS'>,
  ) {
    this.ttlMs = config.INVITATION_TTL_DAYS * DAY_MS;
  }

  onModuleInit(): void {
    // Within the transaction that demotes or removes an admin: their pending invitations go with it.
    this.members.addAdminLeftHook({ onAdminLeft: (m, tenantId, userId) => this.withdrawSentBy(m, tenantId, userId) });
  }

  /**
   * A pending invitation (an existing pending one for the e-mail takes the new role and a new
   * expiry). A member already: 409, as the inviter's member list shows.
   */
  invite(tenantId: string, inviter: UserEntity | undefined, dto: AddTenantUserDto): Promise<InvitationDto> {
    const role = dto.role as TenantRole;
    return this.transactions.run(async (m) => {
      // The guard saw an admin; a demotion committed since must not leave an invitation behind it.
      if (inviter && (await this.invitations.lockRole(m, tenantId, inviter.id)) !== 'admin') {
        throw new ProblemException(AuthProblems['role-required'], 'This needs the admin role; you are no longer admin here.', { requiredRole: 'admin' });
      }
      if (await this.invitations.isMemberByEmail(m, tenantId, dto.email)) {
        throw new ProblemException(TenantProblems['member-exists'], `${dto.email} is already a member of this tenant.`);
      }
      await this.invitations.purgeExpired(m, tenantId);
      const adding = (await this.invitations.hasPending(m, tenantId, dto.email)) ? 0 : 1;
      await this.quotas.reserve(m, 'invitations-per-tenant', tenantId, adding);
      return toInvitationDto(await this.invitations.upsertPending(m, tenantId, dto.email, role, inviter?.id ?? null, this.ttlMs));
    });
  }

  async pendingOfTenant(tenantId: string): Promise<InvitationDto[]> {
    return (await this.invitations.pendingOfTenant(tenantId)).map(toInvitationDto);
  }

  async withdraw(tenantId: string, invitationId: string): Promise<void> {
    if (!(await this.invitations.deletePending(tenantId, invitationId))) {
      throw new ProblemException(TenantProblems['invitation-not-found'], `No pending invitation ${invitationId} in this tenant.`);
    }
  }

  /** Withdraws what `userId` sent in the tenant, in the caller's transaction (they are no longer its admin). */
  async withdrawSentBy(m: Tx, tenantId: string, userId: string): Promise<number> {
    return this.invitations.deletePendingInvitedBy(m, tenantId, userId);
  }

  /** The signed-in user's pending invitations: those naming the e-mail their identity provider verified. */
  async mine(email: VerifiedEmail | undefined): Promise<InvitationDto[]> {
    return (await this.invitations.pendingForEmail(verified(email))).map(toInvitationDto);
  }

  /** Joins the tenant with the invitation's role (a member already keeps their role). */
  async accept(user: UserEntity, email: VerifiedEmail | undefined, invitationId: string): Promise<InvitationDto> {
    const answered = await this.respond(email, invitationId, 'accepted', async (m, row) => {
      await this.invitations.joinTenant(m, row.tenantId, user.id, row.role);
      await this.members.memberChanged(m, row.tenantId, { userId: user.id, action: 'joined', from: null, role: row.role });
    });
    await this.members.announceMembershipChanged(answered.tenantId, user.id);
    return answered;
  }

  decline(email: VerifiedEmail | undefined, invitationId: string): Promise<InvitationDto> {
    return this.respond(email, invitationId, 'declined');
  }

  private respond(
    email: VerifiedEmail | undefined,
    invitationId: string,
    status: 'accepted' | 'declined',
    effect?: (m: Tx, row: InvitationRow) => Promise<unknown>,
  ): Promise<InvitationDto> {
    const address = verified(email);
    return this.transactions.run(async (m) => {
      const row = await this.invitations.lockPendingForEmail(m, invitationId, address);
      // Someone else's invitation looks the same as a missing one; so do expired and withdrawn ones.
      if (!row) {
        throw new ProblemException(
          TenantProblems['invitation-not-found'],
          `No pending invitation ${invitationId} for ${address} (invitations expire, and are withdrawn when their inviter is no longer an admin).`,
        );
      }
      await effect?.(m, row);
      const respondedAt = await this.invitations.respond(m, row.tenantId, row.id, status);
      return toInvitationDto({ ...row, status, respondedAt });
    });
  }
}

function verified(email: VerifiedEmail | undefined): string {
  if (!email?.verified) {
    throw new ProblemException(
      AuthProblems['email-not-verified'],
      'Invitations are answered with an e-mail address your identity provider has verified; verify it there and sign in again.',
    );
  }
  return email.email;
}
