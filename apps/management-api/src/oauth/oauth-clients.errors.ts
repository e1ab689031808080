import { HttpStatus } from '@nestjs/common';
import { registerProblemTypes } from '@flagship/problem-details';

export const OAuthClientProblems = registerProblemTypes({
  'oauth-client-not-found': { status: HttpStatus.NOT_FOUND, title: 'OAuth client not found' },
  'product-key-not-allowed': { status: HttpStatus.FORBIDDEN, title: 'Product key not allowed' },
  'revocation-unavailable': { status: HttpStatus.SERVICE_UNAVAILABLE, title: 'Revocation could not be recorded' },
});
