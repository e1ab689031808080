import { randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { SignJWT } from 'jose';
import { ACCESS_TOKEN_ALG, ACCESS_TOKEN_TYP, OAUTH_OPTIONS, type ResolvedOAuthOptions } from './oauth.options';
import { SigningKeyService } from './signing-key.service';

export interface IssueAccessTokenInput {
  clientId: string;
  tenantId: string;
  /** Already checked against the client's scopes by the caller. */
  scopes: readonly string[];
  productKeys: readonly string[];
}

/** RFC 6749 section 5.1 success body. */
export interface AccessTokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  scope: string;
}

/** Signs client-credentials access tokens (CONTRACT.md section 3): ES256, `kid` and `typ: at+jwt` in the header. */
@Injectable()
export class AccessTokenIssuer {
  constructor(
    @Inject(OAUTH_OPTIONS) private readonly options: ResolvedOAuthOptions,
    private readonly keys: SigningKeyService,
  ) {}

  async issue(input: IssueAccessTokenInput, now: Date = new Date()): Promise<AccessTokenResponse> {
    const key = await this.keys.current();
    const iat = Math.floor(now.getTime() / 1000);
    const scope = input.scopes.join(' ');
    const accessToken = await new SignJWT({ client_id: input.clientId, tenant_id: input.tenantId, scope, product_keys: [...input.productKeys] })
      .setProtectedHeader({ alg: ACCESS_TOKEN_ALG, kid: key.kid, typ: ACCESS_TOKEN_TYP })
      .setIssuer(this.options.issuer)
      .setAudience(this.options.audience)
      .setSubject(input.clientId)
      .setJti(randomBytes(16).toString('base64url'))
      .setIssuedAt(iat)
      .setExpirationTime(iat + this.options.tokenTtlSeconds)
      .sign(key.privateKey);
    return { access_token: accessToken, token_type: 'Bearer', expires_in: this.options.tokenTtlSeconds, scope };
  }
}
