import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { PUBLIC_ROUTE, setCaller } from '@flagship/service-kit';
import type { AuthenticatedRequest } from './auth.decorators';
import { TenantAccessResolver } from './tenant-access.resolver';

/**
 * Every route but the @Public ones needs `Authorization: Bearer`: a user's ID token from the
 * identity provider, or an access token this service issued to an OAuth client (the rules are
 * TenantAccessResolver's, shared with the evaluate route).
 */
@Injectable()
export class AuthenticationGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly access: TenantAccessResolver,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, [context.getHandler(), context.getClass()])) return true;
    const req = context.switchToHttp().getRequest<AuthenticatedRequest>();
    const who = await this.access.authenticate(req.headers.authorization);
    if (who.user) req.authUser = who.user;
    if (who.email) req.authEmail = who.email;
    req.authExpiresAt = who.expiresAt;
    setCaller(req, who.caller);
    return true;
  }
}
