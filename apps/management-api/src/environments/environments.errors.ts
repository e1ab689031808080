import { HttpStatus } from '@nestjs/common';
import { registerProblemTypes } from '@flagship/problem-details';

export const EnvironmentProblems = registerProblemTypes({
  'environment-not-found': { status: HttpStatus.NOT_FOUND, title: 'Environment not found' },
  'environment-exists': { status: HttpStatus.CONFLICT, title: 'Environment already exists' },
});
