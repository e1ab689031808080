import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ProblemException } from '@flagship/problem-details';
import { callerOf } from '@flagship/service-kit';
import { type AuthenticatedRequest, PLATFORM_ADMIN_ONLY, TENANT_ACCESS, type TenantAccessRule, USERS_ONLY } from './auth.decorators';
import { AuthProblems } from './auth.errors';
import { TenantAccessResolver } from './tenant-access.resolver';

/**
 * Resolves the active tenant of @TenantAccess routes and checks the caller may act there:
 * users by membership role, clients by their token's tenant and scopes (CONTRACT.md sections 2, 3;
 * the rules are TenantAccessResolver's, shared with the evaluate route).
 */
@Injectable()
export class AuthorizationGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly access: TenantAccessResolver,
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
    // expiresAt only matters to what is cached from it; the guards cache nothing.
    req.tenant = await this.access.authorize({ caller, ...(req.authUser ? { user: req.authUser } : {}), expiresAt: Infinity }, rule, requested);
    return true;
  }
}
