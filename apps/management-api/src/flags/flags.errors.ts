import { HttpStatus } from '@nestjs/common';
import { ProblemException, registerProblemTypes } from '@flagship/problem-details';

export const FlagProblems = registerProblemTypes({
  'flag-not-found': { status: HttpStatus.NOT_FOUND, title: 'Flag not found' },
  // 400 as the evaluate body's other malformations: the request cannot be evaluated at all.
  'invalid-context': { status: HttpStatus.BAD_REQUEST, title: 'The evaluation context is not a valid context' },
  'flag-exists': { status: HttpStatus.CONFLICT, title: 'A flag with this key exists' },
  'flag-in-use': { status: HttpStatus.CONFLICT, title: 'Other flags depend on this flag' },
  // 409: the change is refused as sent, not because the flag moved on; a change request carries it.
  'approval-required': { status: HttpStatus.CONFLICT, title: "This environment requires approval for changes to a flag's settings" },
  'flag-changed': { status: HttpStatus.PRECONDITION_FAILED, title: 'The flag changed since it was read' },
  // 409 like the quotas: what is stored is larger than the service holds; it answers again once the flags are made smaller.
  'flag-too-large': { status: HttpStatus.CONFLICT, title: "The flag's definition is larger than a flag may be" },
  'flag-set-too-large': { status: HttpStatus.CONFLICT, title: "This environment's flags take more than one environment's flags may" },
  'import-in-progress': { status: HttpStatus.CONFLICT, title: 'Another import of this tenant is under way' },
  'too-many-flag-streams': { status: HttpStatus.TOO_MANY_REQUESTS, title: 'As many flag-data streams are open as this tenant, caller or address may hold' },
  'flag-streams-full': { status: HttpStatus.SERVICE_UNAVAILABLE, title: 'This server holds as many flag-data streams as it may' },
});

/** 404 for a flag this tenant does not have (another tenant's reads the same: its existence is not told). */
export const flagNotFound = (key: string): ProblemException => new ProblemException(FlagProblems['flag-not-found'], `No flag ${key} in this tenant.`);

/** 409 approval-required: `detail` says why and what to do instead (a change request). */
export const approvalRequired = (detail: string): ProblemException => new ProblemException(FlagProblems['approval-required'], detail);
