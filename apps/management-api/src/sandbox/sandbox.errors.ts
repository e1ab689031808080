import { HttpStatus } from '@nestjs/common';
import { registerProblemTypes } from '@flagship/problem-details';

export const SandboxProblems = registerProblemTypes({
  'not-a-sandbox': { status: HttpStatus.NOT_FOUND, title: 'Not a sandbox tenant' },
});
