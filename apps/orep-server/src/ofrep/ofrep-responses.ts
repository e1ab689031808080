import type { CompiledFlag, EvaluationResult } from '@flagship/flag-evaluation';

/**
 * OpenFeature's reason for an evaluation (OFREP passes OpenFeature reasons through):
 * off -> DISABLED; a target or a rule serving a fixed variation -> TARGETING_MATCH; a percentage
 * rollout (a rule's or the fallthrough's) -> SPLIT; the fallthrough serving the flag's default ->
 * DEFAULT. A failed prerequisite has no OpenFeature reason of its own; OpenFeature allows custom
 * reasons, so it is passed as PREREQUISITE_FAILED (LaunchDarkly's name) rather than folded into
 * DISABLED, which would claim the flag itself is off.
 */
export function ofrepReason(result: EvaluationResult): string {
  switch (result.reason) {
    case 'OFF':
      return 'DISABLED';
    case 'TARGET_MATCH':
      return 'TARGETING_MATCH';
    case 'RULE_MATCH':
      return result.inRollout ? 'SPLIT' : 'TARGETING_MATCH';
    case 'FALLTHROUGH':
      return result.inRollout ? 'SPLIT' : 'DEFAULT';
    case 'PREREQUISITE_FAILED':
      return 'PREREQUISITE_FAILED';
    default:
      return 'ERROR';
  }
}

/** OFREP metadata holds primitives only: what explains the answer, when there is something. */
function metadataOf(flag: CompiledFlag, result: EvaluationResult): Record<string, string | number> | undefined {
  const metadata: Record<string, string | number> = {};
  if (flag.version !== undefined) metadata.version = flag.version;
  if (result.ruleId !== undefined) metadata.ruleId = result.ruleId;
  if (result.ruleIndex !== undefined) metadata.ruleIndex = result.ruleIndex;
  if (result.prerequisiteKey !== undefined) metadata.prerequisiteKey = result.prerequisiteKey;
  return Object.keys(metadata).length === 0 ? undefined : metadata;
}

/** The OpenFeature error code and details of a result whose reason is ERROR. */
export function evaluationError(flag: CompiledFlag, result: EvaluationResult): { code: 'TARGETING_KEY_MISSING' | 'GENERAL'; details: string } {
  if (result.errorKind === 'USER_NOT_SPECIFIED') {
    return { code: 'TARGETING_KEY_MISSING', details: 'the context has no targetingKey (nor key or userId) to evaluate with' };
  }
  const through = result.prerequisiteKey !== undefined ? ` (through its prerequisite '${result.prerequisiteKey}')` : '';
  return { code: 'GENERAL', details: `flag '${flag.key}' cannot be evaluated: its configuration is malformed${through}` };
}

/**
 * JSON of the answers, cached per evaluation result. The evaluator returns results built once per
 * compiled flag and shared between calls, so the answer for each is serialised once and the hot
 * path only looks it up. The cache is weak: results of replaced snapshots are collected with them.
 */
export class OfrepResponses {
  private readonly bodies = new WeakMap<EvaluationResult, string>();

  /** A 200 body: `{key, value, reason, variant?, metadata?}` (variant = the variation id). */
  success(flag: CompiledFlag, result: EvaluationResult): string {
    let body = this.bodies.get(result);
    if (body === undefined) {
      const metadata = metadataOf(flag, result);
      body = JSON.stringify({
        key: flag.key,
        value: result.value,
        reason: ofrepReason(result),
        ...(result.variationId !== undefined ? { variant: result.variationId } : {}),
        ...(metadata ? { metadata } : {}),
      });
      this.bodies.set(result, body);
    }
    return body;
  }

  /** A bulk item: the success body, or `{key, errorCode, errorDetails}` when the result is an error. */
  bulkItem(flag: CompiledFlag, result: EvaluationResult): string {
    if (result.reason !== 'ERROR') return this.success(flag, result);
    let body = this.bodies.get(result);
    if (body === undefined) {
      const error = evaluationError(flag, result);
      body = failure(flag.key, error.code, error.details);
      this.bodies.set(result, body);
    }
    return body;
  }
}

export function failure(key: string, errorCode: string, errorDetails: string): string {
  return JSON.stringify({ key, errorCode, errorDetails });
}
