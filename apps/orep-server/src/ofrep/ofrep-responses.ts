import { type CompiledFlag, evaluationError, type EvaluationResult, openFeatureMetadata as metadataOf, openFeatureReason as ofrepReason } from '@flagship/flag-evaluation';

// The OpenFeature mapping is shared with the SDK's in-process provider; these names stay for OFREP's callers.
export { evaluationError, ofrepReason };

/**
 * JSON of the answers, cached per evaluation result. The evaluator returns results built once per
 * compiled flag and shared between calls, so the answer for each is serialised once and the hot
 * path only looks it up. The cache is weak: results of replaced flag sets are collected with them.
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
