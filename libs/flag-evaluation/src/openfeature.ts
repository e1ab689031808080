import type { CompiledFlag } from './compile';
import type { EvaluationResult } from './types';

/**
 * OpenFeature's reason for an evaluation, shared by orep-server's OFREP answers and the SDK's
 * in-process provider so both say the same: off -> DISABLED; a target or a rule serving a fixed
 * variation -> TARGETING_MATCH; a percentage rollout (a rule's or the fallthrough's) -> SPLIT; the
 * fallthrough serving the flag's default -> DEFAULT. A failed prerequisite has no OpenFeature reason
 * of its own; OpenFeature allows custom reasons, so it is passed as PREREQUISITE_FAILED
 * (LaunchDarkly's name) rather than folded into DISABLED, which would claim the flag itself is off.
 */
export function openFeatureReason(result: EvaluationResult): string {
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

/** OpenFeature flag metadata holds primitives only: what explains the answer, when there is something. */
export function openFeatureMetadata(flag: CompiledFlag, result: EvaluationResult): Record<string, string | number> | undefined {
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
