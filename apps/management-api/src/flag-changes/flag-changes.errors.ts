import { HttpStatus } from '@nestjs/common';
import { registerProblemTypes } from '@flagship/problem-details';

export const FlagChangeProblems = registerProblemTypes({
  'change-request-not-found': { status: HttpStatus.NOT_FOUND, title: 'Change request not found' },
  'scheduled-change-not-found': { status: HttpStatus.NOT_FOUND, title: 'Scheduled change not found' },
  // 403 with the reason in `detail`: the caller is known, the rule (a second member, an editor) refuses them.
  'approval-not-allowed': { status: HttpStatus.FORBIDDEN, title: 'This caller may not approve this change request' },
  'change-request-stale': { status: HttpStatus.CONFLICT, title: 'The flag changed since the change request was made' },
  'change-request-closed': { status: HttpStatus.CONFLICT, title: 'The change request is not in a state that allows this' },
  'scheduled-change-closed': { status: HttpStatus.CONFLICT, title: 'The scheduled change has run or was cancelled' },
  'too-many-pending-changes': { status: HttpStatus.CONFLICT, title: 'This flag has as many pending changes in this environment as it may' },
  'too-many-comments': { status: HttpStatus.CONFLICT, title: 'This change request has as many comments as it may' },
});
