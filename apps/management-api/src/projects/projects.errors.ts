import { HttpStatus } from '@nestjs/common';
import { registerProblemTypes } from '@flagship/problem-details';

export const ProjectProblems = registerProblemTypes({
  'project-not-found': { status: HttpStatus.NOT_FOUND, title: 'Project not found' },
});
