import { type ArgumentsHost, Catch, type ExceptionFilter } from '@nestjs/common';
import type { Response } from 'express';

/** RFC 6749 section 5.2 error codes the token endpoint answers with. */
export type OAuthErrorCode = 'invalid_request' | 'invalid_client' | 'unsupported_grant_type' | 'invalid_scope';

const STATUS: Record<OAuthErrorCode, number> = {
  invalid_request: 400,
  invalid_client: 401,
  unsupported_grant_type: 400,
  invalid_scope: 400,
};

/** A refusal of the token endpoint. `description` is shown to the client: it never holds a secret. */
export class OAuthTokenError extends Error {
  override readonly name = 'OAuthTokenError';

  constructor(
    readonly error: OAuthErrorCode,
    readonly description: string,
    /** The client authenticated with HTTP Basic: the 401 must carry a Basic challenge (RFC 6749 section 5.2). */
    readonly basicChallenge = false,
  ) {
    super(description);
  }

  get status(): number {
    return STATUS[this.error];
  }
}

/**
 * Writes OAuthTokenError the RFC 6749 way: `{error, error_description}` as application/json with
 * `Cache-Control: no-store`. Deliberately not problem details: OAuth clients (oauth4webapi, every
 * SDK) parse this shape. Anything else thrown here (415, 429, 500) falls through to the problem filter.
 */
@Catch(OAuthTokenError)
export class OAuthTokenErrorFilter implements ExceptionFilter {
  catch(err: OAuthTokenError, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<Response>();
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Pragma', 'no-cache');
    if (err.status === 401 && err.basicChallenge) res.setHeader('WWW-Authenticate', 'Basic realm="flagship", charset="UTF-8"');
    res.status(err.status).json({ error: err.error, error_description: err.description });
  }
}
