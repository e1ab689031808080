import { HttpStatus } from '@nestjs/common';
import { registerProblemTypes } from '@flagship/problem-details';

export const AdminProblems = registerProblemTypes({
  'tenant-not-found': { status: HttpStatus.NOT_FOUND, title: 'Tenant not found' },
});
