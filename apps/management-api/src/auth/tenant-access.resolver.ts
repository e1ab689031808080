import { Inject, Injectable } from '@nestjs/common';
import type { Plan } from '@flagship/domain';
import { APP_CONFIG } from '@flagship/config';
import type { TenantEntity } from '@flagship/persistence';
import { ProblemException } from '@flagship/problem-details';
import type { CallerContext } from '@flagship/service-kit';
import type { ManagementApiConfig } from '../env.schema';
import { TenantsRepository, type TenantWithRole } from '../tenants/tenants.repository';
import type { UserEntity } from '../users/user.entity';
import { UsersRepository } from '../users/users.repository';
import type { TenantAccessRule, VerifiedEmail } from './auth.decorators';
import { AuthProblems, BEARER_CHALLENGE } from './auth.errors';
import { decideAccess, type RouteAccess, tenantRoute } from './access-decision';
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
   * Whether `who` may call a route (decideAccess) and in which tenant: `requested` (X-Tenant-ID, or
   * the path's tenant) or, for a user who names none, their canonical tenant; refused with a
   * 400/403/404 problem. Fills in the caller's tenant id, plan and (users) role. `safe`: the
   * request's method changes nothing (GET, HEAD).
   */
  async authorize(who: Authenticated, route: RouteAccess, requested: string | undefined, safe = false): Promise<TenantEntity | undefined> {
    const caller = who.caller;
    const user = who.user;
    const grant = await decideAccess(
      {
        route,
        caller,
        ...(user ? { userId: user.id, member: (ms: TenantWithRole) => this.touch(ms.tenant.id, user.id, ms.lastAccessedAt) } : {}),
        ...(requested !== undefined ? { requested } : {}),
        safe,
        now: Date.now(),
      },
      this.tenants,
    );
    if (!grant.tenant) return undefined;
    caller.tenantId = grant.tenant.id;
    caller.plan = grant.tenant.plan as Plan;
    if (grant.role) caller.role = grant.role;
    return grant.tenant;
  }

  /** Both steps, for a route answered outside Nest's guards (a fresh caller each time). */
  async resolve(authorization: string | undefined, tenantHeader: string | undefined, rule: TenantAccessRule): Promise<TenantPrincipal> {
    const who = await this.authenticate(authorization);
    const requested = tenantHeader !== undefined && tenantHeader !== '' ? tenantHeader : undefined;
    const tenant = (await this.authorize(who, tenantRoute(rule), requested))!;
    return { caller: who.caller, tenant, expiresAt: who.expiresAt };
  }

  /** The member's last access in this tenant (the team page's "last active"), written at most once a minute, off the request's path. */
  private touch(tenantId: string, userId: string, last: Date | null): void {
    if (last && Date.now() - last.getTime() < MEMBERSHIP_TOUCH_EVERY_MS) return;
    void this.tenants.touchMembership(tenantId, userId).catch(() => undefined);
  }
}

const MEMBERSHIP_TOUCH_EVERY_MS = 60_000;
