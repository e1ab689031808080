import { Inject, Injectable } from '@nestjs/common';
import { type Plan, roleAtLeast } from '@flagship/domain';
import { APP_CONFIG } from '@flagship/config';
import type { TenantEntity } from '@flagship/persistence';
import { ProblemException } from '@flagship/problem-details';
import type { CallerContext } from '@flagship/service-kit';
import type { ManagementApiConfig } from '../env.schema';
import { TenantsRepository } from '../tenants/tenants.repository';
import type { UserEntity } from '../users/user.entity';
import { UsersRepository } from '../users/users.repository';
import type { TenantAccessRule, VerifiedEmail } from './auth.decorators';
import { AuthProblems, BEARER_CHALLENGE } from './auth.errors';
import { canonicalOf } from './auth.service';
import { CLIENT_TOKEN_PORT, type ClientTokenPort } from './client-token.port';
import { IdTokenVerifier } from './id-token.verifier';

const TOUCH_EVERY_MS = 60_000;

export function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer[ ]+([A-Za-z0-9._~+/=-]+)$/i.exec(header.trim());
  return m?.[1];
}

/** Who sent a request, as its bearer token says. */
export interface Authenticated {
  caller: CallerContext;
  /** The signed-in user (ID tokens only). */
  user?: UserEntity;
  email?: VerifiedEmail;
  /** When the token stops being valid (ms since the epoch): nothing resolved from it may outlive it. */
  expiresAt: number;
}

/** A caller allowed to act in a tenant (the caller's role, tenant id and plan filled in). */
export interface TenantPrincipal {
  caller: CallerContext;
  tenant: TenantEntity;
  /** As Authenticated's. */
  expiresAt: number;
}

/**
 * The rules of who may call and act in which tenant (CONTRACT.md sections 2, 3), in one place: the
 * global guards (AuthenticationGuard, AuthorizationGuard) apply them to every Nest route, and the
 * evaluate route, which is answered outside Nest, calls `resolve` itself, so both refuse the same
 * callers for the same reasons with the same problems.
 */
@Injectable()
export class TenantAccessResolver {
  constructor(
    private readonly idTokens: IdTokenVerifier,
    private readonly users: UsersRepository,
    private readonly tenants: TenantsRepository,
    @Inject(CLIENT_TOKEN_PORT) private readonly clientTokens: ClientTokenPort,
    @Inject(APP_CONFIG) private readonly config: ManagementApiConfig,
  ) {}

  /** The caller of `Authorization: Bearer` (a user's ID token or an access token of ours); a 401 problem otherwise. */
  async authenticate(authorization: string | undefined): Promise<Authenticated> {
    const token = bearerToken(authorization);
    if (!token) {
      throw new ProblemException(AuthProblems['invalid-token'], 'Send Authorization: Bearer <ID token or access token>.', {}, BEARER_CHALLENGE);
    }
    if (this.clientTokens.isAccessToken(token)) return this.clientTokens.verify(token);
    const claims = await this.idTokens.verify(token);
    const user = await this.users.findBySubject(claims.subject);
    if (!user) {
      throw new ProblemException(AuthProblems['not-signed-up'], 'This identity has not signed up; call /api/v1/auth/signup or a sign-in endpoint first.', {}, BEARER_CHALLENGE);
    }
    if (!user.lastAccessedAt || Date.now() - user.lastAccessedAt.getTime() > TOUCH_EVERY_MS) {
      void this.users.touch(user.id).catch(() => undefined);
    }
    const caller: CallerContext = {
      kind: 'user',
      callerId: `user:${user.id}`,
      // The e-mail makes a platform admin only while the identity provider vouches for it.
      isPlatformAdmin: claims.emailVerified && this.config.platformAdminEmails.includes(user.email.toLowerCase()),
    };
    return { caller, user, email: { email: claims.email, verified: claims.emailVerified }, expiresAt: claims.expiresAt };
  }

  /**
   * The tenant `who` acts in under `rule`: `requested` (X-Tenant-ID, or the path's tenant) or, for a
   * user who names none, their canonical tenant; refused with a 400/403/404 problem. Fills in the
   * caller's tenant id, plan and (users) role.
   */
  async authorize(who: Authenticated, rule: TenantAccessRule, requested: string | undefined): Promise<TenantEntity> {
    const caller = who.caller;
    const tenant = caller.kind === 'client' ? await this.forClient(caller, rule, requested) : await this.forUser(caller, who.user!, rule, requested);
    // An expired sandbox stays readable (and evaluable) but takes no more changes.
    if (tenant.isSandbox && tenant.sandboxExpiresAt && tenant.sandboxExpiresAt.getTime() < Date.now() && rule.role !== 'viewer') {
      throw new ProblemException(AuthProblems['sandbox-expired'], `This sandbox expired on ${tenant.sandboxExpiresAt.toISOString()}; it is read-only.`);
    }
    caller.tenantId = tenant.id;
    caller.plan = tenant.plan as Plan;
    return tenant;
  }

  /** Both steps, for a route answered outside Nest's guards (a fresh caller each time). */
  async resolve(authorization: string | undefined, tenantHeader: string | undefined, rule: TenantAccessRule): Promise<TenantPrincipal> {
    const who = await this.authenticate(authorization);
    const requested = tenantHeader !== undefined && tenantHeader !== '' ? tenantHeader : undefined;
    const tenant = await this.authorize(who, rule, requested);
    return { caller: who.caller, tenant, expiresAt: who.expiresAt };
  }

  private async forClient(caller: CallerContext, rule: TenantAccessRule, requested: string | undefined): Promise<TenantEntity> {
    if (!rule.scopes) throw new ProblemException(AuthProblems['users-only'], 'This endpoint takes a user token, not a client token.');
    if (requested !== undefined && requested !== caller.tenantId) {
      throw new ProblemException(AuthProblems['tenant-access-denied'], 'A client token acts only in its own tenant.');
    }
    const missing = rule.scopes.filter((s) => !caller.scopes?.includes(s));
    if (missing.length) {
      throw new ProblemException(AuthProblems['insufficient-scope'], `The token lacks the scope${missing.length > 1 ? 's' : ''} ${missing.join(', ')}.`, { requiredScopes: [...rule.scopes] });
    }
    const tenant = caller.tenantId ? await this.tenants.findById(caller.tenantId) : null;
    if (!tenant) throw new ProblemException(AuthProblems['tenant-access-denied'], "The client's tenant no longer exists.");
    return tenant;
  }

  private async forUser(caller: CallerContext, user: UserEntity, rule: TenantAccessRule, requested: string | undefined): Promise<TenantEntity> {
    const userId = user.id;
    let tenant: TenantEntity | null;
    let role;
    if (requested === undefined) {
      if (rule.headerRequired) {
        throw new ProblemException(AuthProblems['tenant-header-required'], 'Send the X-Tenant-ID header naming the tenant to act in.');
      }
      const canonical = canonicalOf(await this.tenants.tenantsOfUser(userId));
      if (!canonical) throw new ProblemException(AuthProblems['tenant-access-denied'], 'You belong to no tenant.');
      tenant = canonical.tenant;
      role = canonical.role;
      this.touch(tenant.id, userId, canonical.lastAccessedAt);
    } else {
      const membership = await this.tenants.membershipWithTenant(requested, userId);
      tenant = membership?.tenant ?? null;
      if (!membership || !tenant) {
        // Existence is told only to platform admins; anyone else learns nothing about foreign tenants.
        if (caller.isPlatformAdmin && !(await this.tenants.findById(requested))) {
          throw new ProblemException(AuthProblems['tenant-not-found'], `No tenant ${requested}.`);
        }
        throw new ProblemException(AuthProblems['tenant-access-denied'], 'You are not a member of this tenant.');
      }
      role = membership.role;
      this.touch(tenant.id, userId, membership.lastAccessedAt);
    }
    if (!roleAtLeast(role, rule.role)) {
      throw new ProblemException(AuthProblems['role-required'], `This needs the ${rule.role} role; you are ${role} here.`, { requiredRole: rule.role });
    }
    caller.role = role;
    return tenant;
  }

  /** The member's last access in this tenant (the team page's "last active"), written at most once a minute, off the request's path. */
  private touch(tenantId: string, userId: string, last: Date | null): void {
    if (last && Date.now() - last.getTime() < MEMBERSHIP_TOUCH_EVERY_MS) return;
    void this.tenants.touchMembership(tenantId, userId).catch(() => undefined);
  }
}

const MEMBERSHIP_TOUCH_EVERY_MS = 60_000;
