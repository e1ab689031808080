import { HttpStatus } from '@nestjs/common';
import { registerProblemTypes } from '@flagship/problem-details';

/**
 * 409 like the other refusals that depend on what exists (`flag-in-use`, `last-admin`): the same
 * request succeeds once something is deleted or the limit raised. The body names the quota, its
 * limit and the current count.
 */
export const QuotaProblems = registerProblemTypes({
  'quota-exceeded': { status: HttpStatus.CONFLICT, title: 'Quota exceeded' },
});
