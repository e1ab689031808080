import { HttpStatus } from '@nestjs/common';
import { registerProblemTypes } from '@flagship/problem-details';

export const TenantProblems = registerProblemTypes({
  'member-exists': { status: HttpStatus.CONFLICT, title: 'Already a member of this tenant' },
});
