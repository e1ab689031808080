import { HttpStatus } from '@nestjs/common';
import { CommonProblems, registerProblemTypes } from '@flagship/problem-details';

/**
 * The problems this lib answers with. `rate-limited` is already part of the shared vocabulary
 * (CommonProblems); it is re-exported here so callers find every policy problem in one place.
 */
export const RequestPolicyProblems = {
  'rate-limited': CommonProblems['rate-limited'],
  ...registerProblemTypes({
    'idempotency-key-invalid': { status: HttpStatus.BAD_REQUEST, title: 'Invalid Idempotency-Key' },
    'idempotency-key-reused': { status: HttpStatus.UNPROCESSABLE_ENTITY, title: 'Idempotency-Key reused for another request' },
    'idempotency-in-flight': { status: HttpStatus.CONFLICT, title: 'Request with this Idempotency-Key still in progress' },
    'idempotency-unavailable': { status: HttpStatus.SERVICE_UNAVAILABLE, title: 'Idempotency store unavailable' },
    'idempotent-response-not-replayable': { status: HttpStatus.CONFLICT, title: 'Request already processed; its answer carried a secret and is not kept' },
  }),
};
