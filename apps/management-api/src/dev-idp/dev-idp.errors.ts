import { HttpStatus } from '@nestjs/common';
import { registerProblemTypes } from '@flagship/problem-details';

export const DevIdpProblems = registerProblemTypes({
  'dev-idp-account-exists': { status: HttpStatus.CONFLICT, title: 'An account with this e-mail exists' },
  'dev-idp-invalid-credentials': { status: HttpStatus.UNAUTHORIZED, title: 'Wrong e-mail or password' },
});
