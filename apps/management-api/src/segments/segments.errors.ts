import { HttpStatus } from '@nestjs/common';
import { ProblemException, registerProblemTypes } from '@flagship/problem-details';

export const SegmentProblems = registerProblemTypes({
  'segment-not-found': { status: HttpStatus.NOT_FOUND, title: 'Segment not found' },
  'segment-exists': { status: HttpStatus.CONFLICT, title: 'A segment with this key exists in this environment' },
  // 409 like flag-in-use: the same request succeeds once the flags (or segments) stop naming it.
  'segment-in-use': { status: HttpStatus.CONFLICT, title: 'Flags or segments use this segment' },
  'segment-changed': { status: HttpStatus.PRECONDITION_FAILED, title: 'The segment changed since it was read' },
});

/** 404 for a segment this tenant does not have in the environment (another tenant's reads the same). */
export const segmentNotFound = (key: string, environment: string): ProblemException =>
  new ProblemException(SegmentProblems['segment-not-found'], `No segment ${key} in environment ${environment} of this tenant.`);
