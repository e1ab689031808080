import { HttpStatus } from '@nestjs/common';
import { registerProblemTypes } from '@flagship/problem-details';

export const TenantProblems = registerProblemTypes({
  'member-exists': { status: HttpStatus.CONFLICT, title: 'Already a member of this tenant' },
  'member-not-found': { status: HttpStatus.NOT_FOUND, title: 'Not a member of this tenant' },
  'last-admin': { status: HttpStatus.CONFLICT, title: 'A tenant keeps at least one admin' },
  'invitation-not-found': { status: HttpStatus.NOT_FOUND, title: 'Invitation not found' },
});
