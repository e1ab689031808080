import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { type Plan, roleAtLeast } from '@flagship/domain';
import type { TenantEntity } from '@flagship/persistence';
import { ProblemException } from '@flagship/problem-details';
import { callerOf, type CallerContext } from '@flagship/service-kit';
import { TenantsRepository } from '../tenants/tenants.repository';
import { canonicalOf } from './auth.service';
import { type AuthenticatedRequest, PLATFORM_ADMIN_ONLY, TENANT_ACCESS, type TenantAccessRule, USERS_ONLY } from './auth.decorators';
import { AuthProblems } from './auth.errors';

const MEMBERSHIP_TOUCH_EVERY_MS = 60_000;

/**
 * Resolves the active tenant of @TenantAccess routes and checks the caller may act there:
 * users by membership role, clients by their token's tenant and scopes (CONTRACT.md sections 2, 3).
 */
@Injectable()
export class AuthorizationGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly tenants: TenantsRepository,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const targets = [context.getHandler(), context.getClass()];
    const req = context.switchToHttp().getRequest<AuthenticatedRequest>();
    const caller = callerOf(req);
    if (!caller) return true; // a public route
    if (this.reflector.getAllAndOverride<boolean>(PLATFORM_ADMIN_ONLY, targets) && !caller.isPlatformAdmin) {
      throw new ProblemException(AuthProblems['platform-admin-required'], 'Only platform admins may call this endpoint.');
    }
    if (this.reflector.getAllAndOverride<boolean>(USERS_ONLY, targets) && caller.kind !== 'user') {
      throw new ProblemException(AuthProblems['users-only'], 'This endpoint takes a user token, not a client token.');
    }
    const rule = this.reflector.getAllAndOverride<TenantAccessRule | undefined>(TENANT_ACCESS, targets);
    if (!rule) return true;
    const header = rule.tenantFrom === 'path' ? req.params['tenantId'] : req.headers['x-tenant-id'];
    const requested = typeof header === 'string' && header !== '' ? header : undefined;
    const tenant = caller.kind === 'client' ? await this.forClient(caller, rule, requested) : await this.forUser(caller, req, rule, requested);
    // An expired sandbox stays readable (and evaluable) but takes no more changes.
    if (tenant.isSandbox && tenant.sandboxExpiresAt && tenant.sandboxExpiresAt.getTime() < Date.now() && rule.role !== 'viewer') {
      throw new ProblemException(AuthProblems['sandbox-expired'], `This sandbox expired on ${tenant.sandboxExpiresAt.toISOString()}; it is read-only.`);
    }
    req.tenant = tenant;
    caller.tenantId = tenant.id;
    caller.plan = tenant.plan as Plan;
    return true;
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

  private async forUser(caller: CallerContext, req: AuthenticatedRequest, rule: TenantAccessRule, requested: string | undefined): Promise<TenantEntity> {
    const userId = req.authUser!.id;
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
