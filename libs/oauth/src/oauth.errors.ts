import { HttpStatus } from '@nestjs/common';
import { ProblemException, registerProblemTypes } from '@flagship/problem-details';

/**
 * Problems of bearer-token checks. The slugs and titles are the ones management-api's auth uses
 * (registering a slug twice is allowed only with the same meaning), so every app speaks alike.
 */
export const OAuthProblems = registerProblemTypes({
  'invalid-token': { status: HttpStatus.UNAUTHORIZED, title: 'Invalid or expired token' },
  'insufficient-scope': { status: HttpStatus.FORBIDDEN, title: 'Token lacks a required scope' },
});

export type InvalidTokenReason =
  | 'missing'
  | 'malformed'
  | 'unknown_key'
  | 'algorithm'
  | 'signature'
  | 'expired'
  | 'not_yet_valid'
  | 'wrong_issuer'
  | 'wrong_audience'
  | 'wrong_type'
  | 'claims'
  | 'revoked';

/** A refused access token. `message` is safe to show the caller: it never echoes the token or a key. */
export class InvalidTokenError extends Error {
  override readonly name = 'InvalidTokenError';

  constructor(
    readonly reason: InvalidTokenReason,
    message: string,
  ) {
    super(message);
  }
}

const REALM = 'Bearer realm="flagship"';

/**
 * The 401 problem for a refused token, with its RFC 6750 challenge. A request with no token at all
 * gets the bare challenge (RFC 6750 section 3.1: no error code when no credentials were sent).
 */
export function invalidTokenProblem(err: InvalidTokenError): ProblemException {
  const challenge = err.reason === 'missing' ? REALM : `${REALM}, error="invalid_token", error_description="${err.message.replace(/"/g, "'")}"`;
  return new ProblemException(OAuthProblems['invalid-token'], err.message, {}, { 'WWW-Authenticate': challenge });
}

/** The 403 problem for a valid token lacking scopes, naming the scopes needed (RFC 6750 section 3.1). */
export function insufficientScopeProblem(required: readonly string[]): ProblemException {
  return new ProblemException(
    OAuthProblems['insufficient-scope'],
    `This operation needs the scope${required.length === 1 ? '' : 's'} ${required.join(', ')}.`,
    { requiredScopes: [...required] },
    { 'WWW-Authenticate': `${REALM}, error="insufficient_scope", scope="${required.join(' ')}"` },
  );
}
