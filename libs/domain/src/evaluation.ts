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

export const EVALUATION_ERROR_KINDS = ['MALFORMED_FLAG', 'USER_NOT_SPECIFIED', 'FLAG_NOT_FOUND', 'WRONG_TYPE'] as const;
export type EvaluationErrorKind = (typeof EVALUATION_ERROR_KINDS)[number];

/** OpenFeature resolution reasons used by the remote evaluation server (CONTRACT.md section 6). */
export const OPENFEATURE_REASONS = ['STATIC', 'DEFAULT', 'TARGETING_MATCH', 'SPLIT', 'DISABLED', 'UNKNOWN', 'ERROR'] as const;
export type OpenFeatureReason = (typeof OPENFEATURE_REASONS)[number];
