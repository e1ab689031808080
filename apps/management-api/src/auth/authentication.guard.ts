import { type CanActivate, type ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Response } from 'express';
import { APP_CONFIG } from '@flagship/config';
import { ProblemException } from '@flagship/problem-details';
import { PUBLIC_ROUTE, setCaller } from '@flagship/service-kit';
import type { ManagementApiConfig } from '../env.schema';
import { UsersRepository } from '../users/users.repository';
import type { AuthenticatedRequest } from './auth.decorators';
import { AuthProblems, BEARER_CHALLENGE } from './auth.errors';
import { CLIENT_TOKEN_PORT, type ClientTokenPort } from './client-token.port';
import { IdTokenVerifier } from './id-token.verifier';

const TOUCH_EVERY_MS = 60_000;

export function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer[ ]+([A-Za-z0-9._~+/=-]+)$/i.exec(header.trim());
  return m?.[1];
}

/**
 * Every route but the @Public ones needs `Authorization: Bearer`: a user's ID token from the
 * identity provider, or an access token this service issued to an OAuth client.
 */
@Injectable()
export class AuthenticationGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly idTokens: IdTokenVerifier,
    private readonly users: UsersRepository,
    @Inject(CLIENT_TOKEN_PORT) private readonly clientTokens: ClientTokenPort,
    @Inject(APP_CONFIG) private readonly config: ManagementApiConfig,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, [context.getHandler(), context.getClass()])) return true;
    const req = context.switchToHttp().getRequest<AuthenticatedRequest>();
    const token = bearerToken(req.headers.authorization);
    if (!token) {
      throw new ProblemException(AuthProblems['invalid-token'], 'Send Authorization: Bearer <ID token or access token>.', {}, BEARER_CHALLENGE);
    }
    if (this.clientTokens.isAccessToken(token)) {
      setCaller(req, await this.clientTokens.authenticate(req, context.switchToHttp().getResponse<Response>()));
      return true;
    }
    const claims = await this.idTokens.verify(token);
    const user = await this.users.findBySubject(claims.subject);
    if (!user) {
      throw new ProblemException(AuthProblems['not-signed-up'], 'This identity has not signed up; call /api/v1/auth/signup or a sign-in endpoint first.', {}, BEARER_CHALLENGE);
    }
    req.authUser = user;
    req.authEmail = { email: claims.email, verified: claims.emailVerified };
    setCaller(req, {
      kind: 'user',
      callerId: `user:${user.id}`,
      // The e-mail makes a platform admin only while the identity provider vouches for it.
      isPlatformAdmin: claims.emailVerified && this.config.platformAdminEmails.includes(user.email.toLowerCase()),
    });
    if (!user.lastAccessedAt || Date.now() - user.lastAccessedAt.getTime() > TOUCH_EVERY_MS) {
      void this.users.touch(user.id).catch(() => undefined);
    }
    return true;
  }
}
