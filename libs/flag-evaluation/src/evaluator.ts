import { bucketableString, bucketOfHashInput } from './bucketing';
import { OVER_BUDGET, reportOverBudget, resetBudget, ROLLOUT_STEPS, spend } from './budget';
import type { CompiledFlag, CompiledRollout, CompiledRule, FlagPlan, TargetHit } from './compile';
import { checkEvaluationContext, isValidContextKind, MULTI_KIND, singleContextKey, USER_KIND } from './context';
import { ATTR_INVALID, ATTR_KEY, CLAUSE_ERROR, type CompiledClause, keyOfKind, kindPresent, matchClause, MATCH, matchSegmentsWith, NO_MATCH, readAttribute } from './operators';
import { type CompiledSegment, MAX_SEGMENT_DEPTH } from './segment';
import type { CompiledFlagResolver, EvaluationResult } from './types';

/**
 * The evaluation order of CONTRACT.md section 5 (LaunchDarkly's): context key check, flag off,
 * prerequisites, targets, rules in order, fallthrough. Every result returned here was built by
 * compileFlag, so an evaluation allocates nothing except the hash input of a rollout.
 *
 * Each evaluation has a budget of steps (budget.ts); one that runs out answers ERROR/MALFORMED_FLAG.
 */

/**
 * The key of a single-kind context: `key`, else `targetingKey` (OpenFeature), else `userId` (the
 * management API's evaluate body), the first that is a non-empty string. LaunchDarkly refuses empty
 * keys too. undefined for a multi-kind context (its keys are per kind).
 */
export function contextKeyOf(ctx: unknown): string | undefined {
  if (typeof ctx !== 'object' || ctx === null) return undefined;
  return singleContextKey(ctx as Record<string, unknown>);
}

export function evaluateCompiled(
  flag: CompiledFlag,
  ctx: unknown,
  flags: CompiledFlagResolver<CompiledFlag>,
  segments: CompiledFlagResolver<CompiledSegment>,
): EvaluationResult {
  const key = enterContext(ctx);
  // Like LaunchDarkly's SDKs, a context without a key (or otherwise invalid: a bad kind) is refused
  // before the flag is looked at, even when the flag is off.
  if (key === undefined) return flag.plan.userNotSpecified;
  epoch++;
  resetBudget();
  segmentsInUse = segments;
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

/**
 * The kind of the context being evaluated (`multi` for a multi-kind context). Evaluation is
 * synchronous, so one serves every flag, prerequisite and segment of it, as budget.ts' budget does;
 * clauses get it as an argument.
 */
let evaluatingKind = USER_KIND;
/** The last kind found valid: testing it again on every evaluation would cost a regex test. */
let lastValidKind = USER_KIND;

/**
 * Makes `ctx` the context being evaluated. Returns its key (a single-kind context), '' (a
 * multi-kind one), or undefined when it is not a valid context (context.ts).
 */
function enterContext(ctx: unknown): string | undefined {
  if (typeof ctx !== 'object' || ctx === null) return undefined;
  const c = ctx as Record<string, unknown>;
  const kind = c.kind;
  if (kind === undefined || kind === null) {
    evaluatingKind = USER_KIND;
    return singleContextKey(c);
  }
  if (kind === MULTI_KIND) {
    if (Array.isArray(ctx) || checkEvaluationContext(c) !== undefined) return undefined;
    evaluatingKind = MULTI_KIND;
    return '';
  }
  if (kind !== lastValidKind) {
    if (!isValidContextKind(kind)) return undefined;
    lastValidKind = kind;
  }
  evaluatingKind = kind;
  return singleContextKey(c);
}
/** The segments of the evaluation in progress, and how deep segmentMatch has nested. */
let segmentsInUse: CompiledFlagResolver<CompiledSegment> = { get: () => undefined };
let segmentDepth = 0;

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
    // A user (the common case): one map lookup, as before kinds.
    const target = plan.userTargets !== null && evaluatingKind === USER_KIND ? plan.userTargets.get(key) : matchTargets(plan, ctx, key);
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

/** The first target (in LaunchDarkly's order) listing the context's key of its kind. */
function matchTargets(plan: FlagPlan, ctx: Record<string, unknown>, key: string): EvaluationResult | undefined {
  const targets = plan.targets as NonNullable<FlagPlan['targets']>;
  if (evaluatingKind !== MULTI_KIND) return targets.get(evaluatingKind)?.get(key)?.result;
  // A multi-kind context: the earliest hit among its kinds.
  spend(targets.size);
  let first: TargetHit | undefined;
  for (const [kind, byKey] of targets) {
    const k = keyOfKind(kind, ctx, key, evaluatingKind);
    const hit = k === undefined ? undefined : byKey.get(k);
    if (hit !== undefined && (first === undefined || hit.order < first.order)) first = hit;
  }
  return first?.result;
}

/** All clauses must match; an empty rule matches everyone (as in LaunchDarkly). */
function matchRule(rule: CompiledRule, ctx: Record<string, unknown>, key: string): number {
  return matchClauses(rule.clauses, ctx, key);
}

function matchClauses(clauses: readonly CompiledClause[], ctx: Record<string, unknown>, key: string): number {
  spend(1 + clauses.length);
  for (let i = 0; i < clauses.length; i++) {
    const m = matchClause(clauses[i] as CompiledClause, ctx, key, evaluatingKind);
    if (m !== MATCH) return m;
  }
  return MATCH;
}

/**
 * segmentMatch: any of the named segments matches (an unknown segment does not); negate applies. A
 * cycle, a nesting deeper than MAX_SEGMENT_DEPTH or a malformed segment makes the flag malformed,
 * as LaunchDarkly answers a cycle.
 */
matchSegmentsWith(matchSegmentClause);

function matchSegmentClause(c: CompiledClause, keys: readonly string[], ctx: Record<string, unknown>, key: string): number {
  let matched = false;
  for (let i = 0; i < keys.length; i++) {
    const segment = segmentsInUse.get(keys[i] as string);
    if (segment === undefined) continue;
    const m = matchSegment(segment, ctx, key);
    if (m === CLAUSE_ERROR) return m;
    if (m === MATCH) {
      matched = true;
      break;
    }
  }
  return matched !== c.negate ? MATCH : NO_MATCH;
}

/** Memoised within one evaluation: a segment named by many rules or segments is matched once. */
function matchSegment(segment: CompiledSegment, ctx: Record<string, unknown>, key: string): number {
  if (segment.memoEpoch === epoch) return segment.memoResult;
  if (segment.visiting || segmentDepth >= MAX_SEGMENT_DEPTH) return CLAUSE_ERROR;
  spend(1);
  segment.visiting = true;
  segmentDepth++;
  let m: number;
  try {
    m = matchSegmentPlan(segment, ctx, key);
  } finally {
    segment.visiting = false;
    segmentDepth--;
  }
  segment.memoEpoch = epoch;
  segment.memoResult = m;
  return m;
}

function matchSegmentPlan(segment: CompiledSegment, ctx: Record<string, unknown>, key: string): number {
  const plan = segment.plan;
  if (!plan.usable) return CLAUSE_ERROR;
  if (plan.included !== null && listed(plan.included, ctx, key)) return MATCH;
  if (plan.excluded !== null && listed(plan.excluded, ctx, key)) return NO_MATCH;
  const rules = plan.rules;
  for (let i = 0; i < rules.length; i++) {
    const rule = rules[i] as (typeof rules)[number];
    const m = matchClauses(rule.clauses, ctx, key);
    if (m === CLAUSE_ERROR) return m;
    if (m !== MATCH) continue;
    if (!rule.weighted) return MATCH;
    // A weighted rule: the context's bucket in the segment (no seed), else the next rule.
    if (rule.attr.kind === ATTR_INVALID) return CLAUSE_ERROR;
    if (bucketOf(rule.attr, rule.kind, rule.prefix, ctx, key) < rule.threshold) return MATCH;
  }
  return NO_MATCH;
}

/** Whether the context's key of any kind the segment lists is among that kind's keys. */
function listed(byKind: ReadonlyMap<string, ReadonlySet<string>>, ctx: Record<string, unknown>, key: string): boolean {
  if (evaluatingKind !== MULTI_KIND) return byKind.get(evaluatingKind)?.has(key) === true;
  spend(byKind.size);
  for (const [kind, keys] of byKind) {
    const k = keyOfKind(kind, ctx, key, evaluatingKind);
    if (k !== undefined && keys.has(k)) return true;
  }
  return false;
}

/** LaunchDarkly's bucket of the context for `attr` of `kind`: 0 when the kind is missing or the value cannot be bucketed. */
function bucketOf(attr: { kind: number; name: string; path: readonly string[] }, kind: string, prefix: string, ctx: Record<string, unknown>, key: string): number {
  spend(ROLLOUT_STEPS);
  let value: string | undefined;
  if (kind === evaluatingKind) value = bucketableString(attr.kind === ATTR_KEY ? key : readAttribute(ctx, attr, key));
  else {
    const other = kindPresent(kind, ctx, evaluatingKind);
    if (other === undefined) return 0;
    value = bucketableString(attr.kind === ATTR_KEY ? other.key : readAttribute(other, attr, other.key as string));
  }
  return value === undefined ? 0 : bucketOfHashInput(prefix + value);
}

/** The rollout slice of this context: the first with bucket * total < cumulative weight, else the last. */
function pickSlice(rollout: CompiledRollout, ctx: Record<string, unknown>, key: string, flag: CompiledFlag): EvaluationResult {
  const attr = rollout.attr;
  if (attr.kind === ATTR_INVALID) return flag.plan.malformed;
  const scaled = bucketOf(attr, rollout.kind, rollout.prefix, ctx, key) * rollout.total;
  const cumulative = rollout.cumulative;
  const last = cumulative.length - 1;
  for (let i = 0; i < last; i++) {
    if (scaled < (cumulative[i] as number)) return rollout.results[i] as EvaluationResult;
  }
  return rollout.results[last] as EvaluationResult;
}
