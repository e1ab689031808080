import { bucketableString, bucketOfHashInput } from './bucketing';
import { OVER_BUDGET, reportOverBudget, resetBudget, ROLLOUT_STEPS, spend } from './budget';
import type { CompiledFlag, CompiledRollout, CompiledRule } from './compile';
import { ATTR_INVALID, ATTR_KEY, CLAUSE_ERROR, matchClause, MATCH, readAttribute } from './operators';
import type { CompiledFlagResolver, EvaluationResult } from './types';

/**
 * The evaluation order of CONTRACT.md section 5 (LaunchDarkly's): context key check, flag off,
 * prerequisites, targets, rules in order, fallthrough. Every result returned here was built by
 * compileFlag, so an evaluation allocates nothing except the hash input of a rollout.
 *
 * Each evaluation has a budget of steps (budget.ts); one that runs out answers ERROR/MALFORMED_FLAG.
 */

/**
 * The context key: `key`, else `targetingKey` (OpenFeature), else `userId` (the management API's
 * evaluate body), the first that is a non-empty string. LaunchDarkly refuses empty keys too.
 */
export function contextKeyOf(ctx: unknown): string | undefined {
  if (typeof ctx !== 'object' || ctx === null) return undefined;
  const c = ctx as Record<string, unknown>;
  let k = c.key;
  if (typeof k === 'string' && k !== '') return k;
  k = c.targetingKey;
  if (typeof k === 'string' && k !== '') return k;
  k = c.userId;
  if (typeof k === 'string' && k !== '') return k;
  return undefined;
}

export function evaluateCompiled(
  flag: CompiledFlag,
  ctx: unknown,
  flags: CompiledFlagResolver<CompiledFlag>,
): EvaluationResult {
  const key = contextKeyOf(ctx);
  // Like LaunchDarkly's SDKs, a context without a key is refused before the flag is looked at,
  // even when the flag is off.
  if (key === undefined) return flag.plan.userNotSpecified;
  epoch++;
  resetBudget();
  try {
    return evaluateWithKey(flag, ctx as Record<string, unknown>, key, flags);
  } catch (e) {
    if (e !== OVER_BUDGET) throw e;
    // LaunchDarkly's answer to a flag it cannot evaluate: ERROR/MALFORMED_FLAG, the flag's default.
    reportOverBudget(flag.key);
    return flag.plan.malformed;
  }
}

/**
 * Numbers the evaluations, so a flag's memoised result as a prerequisite (CompiledFlag.memoEpoch)
 * is known to belong to the evaluation in progress without a per-call map.
 */
let epoch = 0;

function evaluateWithKey(
  flag: CompiledFlag,
  ctx: Record<string, unknown>,
  key: string,
  flags: CompiledFlagResolver<CompiledFlag>,
): EvaluationResult {
  const plan = flag.plan;
  if (!plan.usable) return plan.malformed;
  if (!flag.enabled) return plan.off;

  if (plan.prerequisites.length !== 0) {
    const failure = checkPrerequisites(flag, ctx, key, flags);
    if (failure !== null) return failure;
  }

  if (plan.targets !== null) {
    const target = plan.targets.get(key);
    if (target !== undefined) return target;
  }

  const rules = plan.rules;
  for (let i = 0; i < rules.length; i++) {
    const rule = rules[i] as CompiledRule;
    const m = matchRule(rule, ctx, key);
    if (m === MATCH) return rule.rollout === null ? (rule.result as EvaluationResult) : pickSlice(rule.rollout, ctx, key, flag);
    if (m === CLAUSE_ERROR) return plan.malformed;
  }

  return plan.fallthrough === null ? plan.fallthroughDefault : pickSlice(plan.fallthrough, ctx, key, flag);
}

/**
 * null when every prerequisite is on and serves the named variation; otherwise the result to
 * return. Prerequisites are checked in order and the first failure wins. A cycle, or a prerequisite
 * that is itself malformed, makes this flag malformed too (LaunchDarkly propagates the error).
 */
function checkPrerequisites(
  flag: CompiledFlag,
  ctx: Record<string, unknown>,
  key: string,
  flags: CompiledFlagResolver<CompiledFlag>,
): EvaluationResult | null {
  const prerequisites = flag.plan.prerequisites;
  flag.visiting = true;
  try {
    for (let i = 0; i < prerequisites.length; i++) {
      const p = prerequisites[i] as (typeof prerequisites)[number];
      const other = flags.get(p.key);
      if (other === undefined) return p.failed;
      if (other.visiting) return p.malformed;
      spend(1);
      // Memoised within one evaluation: a diamond of prerequisites costs its flags, not its paths.
      let r: EvaluationResult;
      if (other.memoEpoch === epoch) r = other.memoResult as EvaluationResult;
      else {
        r = evaluateWithKey(other, ctx, key, flags);
        other.memoEpoch = epoch;
        other.memoResult = r;
      }
      if (r.reason === 'ERROR') return p.malformed;
      // An off prerequisite fails even when its off value is the named variation.
      if (r.reason === 'OFF' || r.variationId !== p.variationId) return p.failed;
    }
    return null;
  } finally {
    flag.visiting = false;
  }
}

/** All clauses must match; an empty rule matches everyone (as in LaunchDarkly). */
function matchRule(rule: CompiledRule, ctx: Record<string, unknown>, key: string): number {
  const clauses = rule.clauses;
  spend(1 + clauses.length);
  for (let i = 0; i < clauses.length; i++) {
    const m = matchClause(clauses[i] as (typeof clauses)[number], ctx, key);
    if (m !== MATCH) return m;
  }
  return MATCH;
}

/** The rollout slice of this context: the first with bucket * total < cumulative weight, else the last. */
function pickSlice(rollout: CompiledRollout, ctx: Record<string, unknown>, key: string, flag: CompiledFlag): EvaluationResult {
  const attr = rollout.attr;
  if (attr.kind === ATTR_INVALID) return flag.plan.malformed;
  spend(ROLLOUT_STEPS);
  const value = bucketableString(attr.kind === ATTR_KEY ? key : readAttribute(ctx, attr, key));
  const scaled = value === undefined ? 0 : bucketOfHashInput(rollout.prefix + value) * rollout.total;
  const cumulative = rollout.cumulative;
  const last = cumulative.length - 1;
  for (let i = 0; i < last; i++) {
    if (scaled < (cumulative[i] as number)) return rollout.results[i] as EvaluationResult;
  }
  return rollout.results[last] as EvaluationResult;
}
