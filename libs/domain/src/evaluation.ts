/** Evaluation reasons of the management API (LaunchDarkly's vocabulary, CONTRACT.md section 5). */
export const EVALUATION_REASONS = [
  'OFF',
  'PREREQUISITE_FAILED',
  'TARGET_MATCH',
  'RULE_MATCH',
  'FALLTHROUGH',
  'ERROR',
] as const;
export type EvaluationReason = (typeof EVALUATION_REASONS)[number];

/**
 * Why an evaluation answered ERROR. A missing flag or a type mismatch is not among them: those are
 * the remote evaluation server's OFREP error codes (FLAG_NOT_FOUND, TYPE_MISMATCH), not the evaluator's.
 */
export const EVALUATION_ERROR_KINDS = ['MALFORMED_FLAG', 'USER_NOT_SPECIFIED'] as const;
export type EvaluationErrorKind = (typeof EVALUATION_ERROR_KINDS)[number];

/** OpenFeature resolution reasons used by the remote evaluation server (CONTRACT.md section 6). */
export const OPENFEATURE_REASONS = ['STATIC', 'DEFAULT', 'TARGETING_MATCH', 'SPLIT', 'DISABLED', 'UNKNOWN', 'ERROR'] as const;
export type OpenFeatureReason = (typeof OPENFEATURE_REASONS)[number];
