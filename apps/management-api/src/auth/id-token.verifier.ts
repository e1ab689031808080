import { Inject, Injectable } from '@nestjs/common';
import { createLocalJWKSet, createRemoteJWKSet, type JWTVerifyGetKey, jwtVerify } from 'jose';
import { APP_CONFIG } from '@flagship/config';
import { ProblemException } from '@flagship/problem-details';
import { DevIdpService } from '../dev-idp/dev-idp.service';
import type { ManagementApiConfig } from '../env.schema';
import { AuthProblems, INVALID_TOKEN_CHALLENGE } from './auth.errors';

export interface IdentityClaims {
  subject: string;
  email: string;
  name: string;
  /** `firebase.sign_in_provider` when the token has one (google.com, github.com, password...). */
  signInProvider: string | null;
  /**
   * `email_verified === true`: the provider checked that the person owns the e-mail. Anything else
   * (false, absent, "true") is unverified: such an e-mail may not decide who someone is (sign-up,
   * invitations, platform admin).
   */
  emailVerified: boolean;
  /** `exp` in ms since the epoch (Infinity when the token names none): what is resolved from the token must not outlive it. */
  expiresAt: number;
}

/**
 * Verifies user ID tokens from the configured identity provider (any OIDC provider or Firebase):
 * signature against the provider's JWKS (RS256 or ES256 only, per key), issuer, audience, expiry.
 */
/** Verified tokens kept until they expire, so a busy client's token is checked once, not per call. */
const CACHE_MAX = 10_000;

@Injectable()
export class IdTokenVerifier {
  private readonly keys: JWTVerifyGetKey;
  private readonly verified = new Map<string, { claims: IdentityClaims; expiresAt: number }>();

  constructor(
    @Inject(APP_CONFIG) private readonly config: ManagementApiConfig,
    devIdp: DevIdpService,
  ) {
    if (config.IDP_MODE === 'dev') {
      let local: JWTVerifyGetKey | undefined;
      this.keys = async (header, token) => {
        local ??= createLocalJWKSet(await devIdp.jwks());
        return local(header, token);
      };
    } else {
      this.keys = createRemoteJWKSet(new URL(config.IDP_JWKS_URI), { cooldownDuration: 30_000, cacheMaxAge: 600_000 });
    }
  }

  async verify(token: string): Promise<IdentityClaims> {
    const hit = this.verified.get(token);
    if (hit && hit.expiresAt > Date.now()) return hit.claims;
    if (hit) this.verified.delete(token);
    return this.verifyUncached(token);
  }

  private async verifyUncached(token: string): Promise<IdentityClaims> {
    try {
      const { payload } = await jwtVerify(token, this.keys, {
        issuer: this.config.idpIssuer,
        audience: this.config.idpAudiences,
        algorithms: ['RS256', 'ES256'],
        clockTolerance: 5,
      });
      if (typeof payload.sub !== 'string' || payload.sub === '' || typeof payload['email'] !== 'string') {
        throw new Error('the token has no subject or e-mail');
      }
      const firebase = payload['firebase'] as { sign_in_provider?: unknown } | undefined;
      const claims: IdentityClaims = {
        subject: payload.sub,
        email: payload['email'],
        name: typeof payload['name'] === 'string' ? payload['name'] : '',
        signInProvider: typeof firebase?.sign_in_provider === 'string' ? firebase.sign_in_provider : null,
        emailVerified: payload['email_verified'] === true,
        expiresAt: typeof payload.exp === 'number' ? payload.exp * 1000 : Infinity,
      };
      if (typeof payload.exp === 'number') {
        if (this.verified.size >= CACHE_MAX) this.verified.delete(this.verified.keys().next().value!);
        this.verified.set(token, { claims, expiresAt: payload.exp * 1000 });
      }
      return claims;
    } catch {
      throw new ProblemException(AuthProblems['invalid-token'], 'The ID token is invalid, expired or not from the configured identity provider.', {}, INVALID_TOKEN_CHALLENGE);
    }
  }
}
