import { Injectable } from '@nestjs/common';
import type { TenantRole } from '@flagship/domain';
import { TransactionRunner, type Tx } from '@flagship/persistence';
import { ProblemException } from '@flagship/problem-details';
import type { VerifiedEmail } from '../auth/auth.decorators';
import { AuthProblems } from '../auth/auth.errors';
import { UsersRepository } from '../users/users.repository';
import type { UserEntity } from '../users/user.entity';
import type { AddTenantUserDto, InvitationDto } from './tenants.dto';
import { TenantProblems } from './tenants.errors';
import { type InvitationRow, InvitationsRepository } from './invitations.repository';
import { TenantsRepository } from './tenants.repository';
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
    respondedAt: r.respondedAt?.toISOString() ?? null,
  };
}

/**
 * Adding someone to a tenant by e-mail invites them: nothing changes for the invitee until they,
 * signed in with that e-mail verified by their identity provider, accept. The inviter's answer is
 * the same whether or not the e-mail has an account, so inviting tells nobody who is signed up.
 */
@Injectable()
export class InvitationsService {
  constructor(
    private readonly transactions: TransactionRunner,
    private readonly invitations: InvitationsRepository,
    private readonly tenants: TenantsRepository,
    private readonly users: UsersRepository,
    private readonly tenantsService: TenantsService,
  ) {}

  /** A pending invitation (an existing pending one for the e-mail takes the new role). A member already: 409, as the inviter's member list shows. */
  invite(tenantId: string, inviter: UserEntity | undefined, dto: AddTenantUserDto): Promise<InvitationDto> {
    return this.transactions.run(async (m) => {
      const existing = await this.users.findByEmail(dto.email, m);
      if (existing && (await this.tenants.isMember(m, tenantId, existing.id))) {
        throw new ProblemException(TenantProblems['member-exists'], `${dto.email} is already a member of this tenant.`);
      }
      return toInvitationDto(await this.invitations.upsertPending(m, tenantId, dto.email, dto.role as TenantRole, inviter?.id ?? null));
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

  /** The signed-in user's pending invitations: those naming the e-mail their identity provider verified. */
  async mine(email: VerifiedEmail | undefined): Promise<InvitationDto[]> {
    return (await this.invitations.pendingForEmail(verified(email))).map(toInvitationDto);
  }

  /** Joins the tenant with the invitation's role (a member already keeps their role). */
  async accept(user: UserEntity, email: VerifiedEmail | undefined, invitationId: string): Promise<InvitationDto> {
    const answered = await this.respond(email, invitationId, 'accepted', (m, row) => this.tenants.addMemberIfAbsent(m, row.tenantId, user.id, row.role));
    await this.tenantsService.announceMembershipChanged(answered.tenantId, user.id);
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
      // Someone else's invitation looks the same as a missing one.
      if (!row) throw new ProblemException(TenantProblems['invitation-not-found'], `No pending invitation ${invitationId} for ${address}.`);
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
