/**
 * @flagship/flag-evaluation: the pure flag evaluator (LaunchDarkly-compatible semantics,
 * CONTRACT.md section 5). No I/O, no framework; only node:crypto and re2js (linear-time regular expressions).
 */
export type {
  ClientSideAvailability,
  Clause,
  ContextTarget,
  CompiledFlagResolver,
  EvaluationContext,
  EvaluationErrorKind,
  EvaluationReason,
  EvaluationResult,
  FlagDefinition,
  FlagType,
  JsonValue,
  Operator,
  Prerequisite,
  Rollout,
  Rule,
  SegmentDefinition,
  SegmentRule,
  SegmentTarget,
  Target,
  Variation,
  WeightedVariation,
} from './types';
export { FLAG_TYPES, OPERATORS } from './types';
export { CompiledFlag, compileFlag, FALLTHROUGH_RULE_ID } from './compile';
export { clientSideAvailabilityOf, type ClientSideKeyKind, SERVER_ONLY } from './client-side';
export { CompiledFlagSet, evaluateFlag } from './flag-set';
export { LiveFlagSet, type FlagText } from './live-flag-set';
export { contextKeyOf } from './evaluator';
export {
  checkEvaluationContext,
  type ContextProblem,
  contextFromOpenFeature,
  contextKindsOf,
  isValidContextKind,
  MAX_CONTEXT_KINDS,
  MULTI_KIND,
  USER_KIND,
} from './context';
export { CompiledSegment, compileSegment, MAX_SEGMENT_DEPTH } from './segment';
export { ATTR_INVALID, parseAttributeRef, parseClauseAttribute, USER_CONTEXT_KIND } from './operators';
export { bucketValue } from './bucketing';
export { FLAG_FILE_VERSION, withLegacyReferenceKinds } from './legacy-references';
export { MAX_REGEX_INPUT_LENGTH, MAX_REGEX_PATTERN_LENGTH } from './regex';
export { MAX_EVALUATION_STEPS, onEvaluationOverBudget } from './budget';
export {
  checkFlagDefinition,
  checkSegmentDefinition,
  type FlagDefinitionCheck,
  MAX_PREREQUISITE_DEPTH,
  MAX_PREREQUISITE_FLAGS,
  prerequisiteBoundProblems,
  SEGMENT_WEIGHT_SCALE,
  validateFlagDefinition,
  type ValidationProblem,
} from './validate';
export { valueMatchesType } from './json-value';
export { evaluationError, openFeatureMetadata, openFeatureReason } from './openfeature';
export { servesOneValue } from './lifecycle';
export { DEFAULT_FLAG_MAX_BYTES, flagDefinitionBytes, utf8Length } from './size';
