import { hashPrefix } from './bucketing';
import { clientSideAvailabilityOf, SERVER_ONLY } from './client-side';
import { evaluateCompiled } from './evaluator';
import { isPlainObject, jsonEquals, toFrozenJson } from './json-value';
import { USER_KIND } from './context';
import { ATTR_INVALID, type AttributeRef, type CompiledClause, compileClauses, contextKindOf, KEY_REF, parseClauseAttribute } from './operators';
import type { CompiledSegment } from './segment';
import {
  type ClientSideAvailability,
  type CompiledFlagResolver,
  type EvaluationContext,
  type EvaluationResult,
  FLAG_TYPES,
  type FlagDefinition,
  type FlagType,
  type JsonValue,
} from './types';

/**
 * Compiling turns a stored flag into an evaluation plan once, so that evaluating it allocates
 * nothing: every result an evaluation can return (per target, rule, rollout slice, prerequisite) is
 * built here and frozen, regexes/semvers/dates are parsed here, and variation ids are resolved here.
 *
 * Compiling never throws. Data that is not even shaped like a flag (variations not an array, a
 * clause without values, a variation value that is not JSON...) makes the whole flag evaluate to
 * ERROR/MALFORMED_FLAG. References to unknown variations, rules with neither variationId nor
 * rollout, empty rollouts and invalid attribute references only do so when an evaluation reaches
 * them, as in LaunchDarkly.
 */

/**
 * The id of the rule that carries a flag's LaunchDarkly fallthrough for one environment (the
 * import puts it last, with no clauses): it answers reason FALLTHROUGH, with no rule id, as
 * LaunchDarkly would. Our own fallthrough is the variations' weights, shared by every environment.
 */
export const FALLTHROUGH_RULE_ID = 'fallthrough';

export interface CompiledRollout {
  readonly attr: AttributeRef;
  /** The context kind bucketed (`user` without contextKind); a context without it takes bucket 0. */
  readonly kind: string;
  /** `{flagKey}.{salt}.` or `{seed}.`: the hash input is this plus the bucketed value. */
  readonly prefix: string;
  readonly total: number;
  /** Running sums of the weights; slice i is chosen when bucket * total < cumulative[i]. */
  readonly cumulative: readonly number[];
  /** One result per slice; the flag's malformed result for a slice naming no variation. */
  readonly results: readonly EvaluationResult[];
}

export interface CompiledRule {
  readonly clauses: readonly CompiledClause[];
  /** The fixed outcome when the rule matches, or null when `rollout` decides. */
  readonly result: EvaluationResult | null;
  readonly rollout: CompiledRollout | null;
}

export interface CompiledPrerequisite {
  readonly key: string;
  readonly variationId: string;
  readonly failed: EvaluationResult;
  readonly malformed: EvaluationResult;
}

/** A target's result and its place in the order (a multi-kind context takes the first of its kinds' hits). */
export interface TargetHit {
  readonly order: number;
  readonly result: EvaluationResult;
}

export interface FlagPlan {
  /** False when the stored data is not shaped like a flag: every evaluation is MALFORMED_FLAG. */
  readonly usable: boolean;
  readonly off: EvaluationResult;
  readonly malformed: EvaluationResult;
  readonly userNotSpecified: EvaluationResult;
  readonly prerequisites: readonly CompiledPrerequisite[];
  /**
   * Context kind -> context key -> the first target listing it (LaunchDarkly's order: `targets`, or
   * `contextTargets` when there are any); null when there are no targets.
   */
  readonly targets: ReadonlyMap<string, ReadonlyMap<string, TargetHit>> | null;
  /** The results of targets' `user` entry, read first: most contexts are users. */
  readonly userTargets: ReadonlyMap<string, EvaluationResult> | null;
  readonly rules: readonly CompiledRule[];
  /** The fallthrough rollout over the variations' weights, or null when no weight is positive. */
  readonly fallthrough: CompiledRollout | null;
  readonly fallthroughDefault: EvaluationResult;
}

/** A flag ready to evaluate. Build with compileFlag or CompiledFlagSet.compile. */
export class CompiledFlag {
  /**
   * Set while this flag's prerequisites are being evaluated. Evaluation is synchronous, so meeting a
   * flag that is already "visiting" means a prerequisite cycle; no per-call visited list is needed.
   * @internal
   */
  visiting = false;
  /** The evaluation (evaluator.ts' epoch) whose result as a prerequisite memoResult holds. @internal */
  memoEpoch = 0;
  /** @internal */
  memoResult: EvaluationResult | undefined = undefined;

  constructor(
    readonly key: string,
    /** undefined when the stored type is not one of FLAG_TYPES. */
    readonly type: FlagType | undefined,
    readonly enabled: boolean,
    readonly version: number | undefined,
    /** @internal the evaluation plan; its shape is not part of the API. */
    readonly plan: FlagPlan,
    /** Which client-side keys may evaluate it (none unless the definition says so). */
    readonly clientSide: Readonly<ClientSideAvailability> = SERVER_ONLY,
  ) {}

  /** What the flag serves when switched off (its off variation): a bound gateway route's control. */
  get offResult(): EvaluationResult {
    return this.plan.off;
  }

  /**
   * Evaluates this flag. Prerequisites are looked up in `flags` (a CompiledFlagSet, or any Map of
   * compiled flags); without it, a flag with prerequisites serves PREREQUISITE_FAILED.
   */
  evaluate(
    ctx: EvaluationContext,
    flags?: CompiledFlagResolver<CompiledFlag>,
    segments?: CompiledFlagResolver<CompiledSegment>,
  ): EvaluationResult {
    return evaluateCompiled(this, ctx, flags ?? NO_FLAGS, segments ?? NO_SEGMENTS);
  }
}

const NO_FLAGS: CompiledFlagResolver<CompiledFlag> = { get: () => undefined };
/** Without segments, a segmentMatch names unknown segments: it does not match (as in LaunchDarkly). */
export const NO_SEGMENTS: CompiledFlagResolver<CompiledSegment> = { get: () => undefined };

export type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** Frozen, with its fields always in the same order and no undefined-valued fields. */
function freezeResult(r: Mutable<EvaluationResult>): EvaluationResult {
  const out: Mutable<EvaluationResult> = { value: r.value, enabled: r.enabled, reason: r.reason };
  if (r.variationId !== undefined) out.variationId = r.variationId;
  if (r.ruleId !== undefined) out.ruleId = r.ruleId;
  if (r.ruleIndex !== undefined) out.ruleIndex = r.ruleIndex;
  if (r.inRollout !== undefined) out.inRollout = r.inRollout;
  if (r.errorKind !== undefined) out.errorKind = r.errorKind;
  if (r.prerequisiteKey !== undefined) out.prerequisiteKey = r.prerequisiteKey;
  return Object.freeze(out);
}

/** Reads the stored data defensively: it is typed, but it came from a database or a file. */
export function asArray(value: unknown, onBad: () => void): readonly unknown[] {
  if (value === undefined || value === null) return [];
  if (Array.isArray(value)) return value;
  onBad();
  return [];
}

function resultsOf(hits: ReadonlyMap<string, TargetHit> | undefined): ReadonlyMap<string, EvaluationResult> | null {
  return hits === undefined ? null : new Map([...hits].map(([key, hit]) => [key, hit.result]));
}

export function compileFlag(definition: FlagDefinition): CompiledFlag {
  let usable = true;
  const bad = (): void => {
    usable = false;
  };
  const raw: unknown = definition;
  const flag: Record<string, unknown> = isPlainObject(raw) ? raw : {};
  if (!isPlainObject(raw)) bad();

  const key = typeof flag.key === 'string' ? flag.key : '';
  if (typeof flag.key !== 'string') bad();
  const type = (FLAG_TYPES as readonly unknown[]).includes(flag.type) ? (flag.type as FlagType) : undefined;
  const enabled = flag.enabled === true;
  const version = typeof flag.version === 'number' ? flag.version : undefined;
  // No salt means the flag key (CONTRACT.md); an empty one is hashed as it is, as LaunchDarkly
  // hashes a flag without salt (`{flagKey}..{value}`), so imported flags keep their buckets.
  const salt = typeof flag.salt === 'string' ? flag.salt : key;

  let defaultValue = toFrozenJson(flag.defaultValue);
  if (defaultValue === undefined) {
    bad();
    defaultValue = null;
  }
  let offValue: JsonValue | undefined =
    flag.offValue === undefined ? (type === 'boolean' ? false : defaultValue) : toFrozenJson(flag.offValue);
  if (offValue === undefined) {
    bad();
    offValue = defaultValue;
  }

  // Variations: value, id and weight, indexed by id (the first of duplicate ids wins).
  const variationIds: string[] = [];
  const variationValues: JsonValue[] = [];
  const weights: number[] = [];
  const indexById = new Map<string, number>();
  for (const v of asArray(flag.variations, bad)) {
    const value = isPlainObject(v) ? toFrozenJson(v.value) : undefined;
    if (!isPlainObject(v) || typeof v.id !== 'string' || value === undefined) {
      bad();
      continue;
    }
    const index = variationIds.length;
    variationIds.push(v.id);
    variationValues.push(value);
    // Negative, non-finite or missing weights count as 0 (validateFlagDefinition refuses them).
    weights.push(typeof v.weight === 'number' && v.weight > 0 && Number.isFinite(v.weight) ? v.weight : 0);
    if (!indexById.has(v.id)) indexById.set(v.id, index);
  }

  // The off value is a value, not a variation; it names the first variation holding an equal value
  // (LaunchDarkly's offVariation is an index, so its results always carry one).
  const offVariationIndex = variationValues.findIndex((value) => jsonEquals(value, offValue));
  const offVariationId = offVariationIndex >= 0 ? variationIds[offVariationIndex] : undefined;

  // On MALFORMED_FLAG LaunchDarkly's SDKs return the caller's default. This library has no caller
  // default, so it returns the flag's defaultValue and the flag's own `enabled`; a caller that has a
  // default of its own (an OFREP or /v1 evaluate request) should serve that on reason ERROR.
  const malformed = freezeResult({ value: defaultValue, enabled, reason: 'ERROR', errorKind: 'MALFORMED_FLAG' });
  const userNotSpecified = freezeResult({ value: defaultValue, enabled, reason: 'ERROR', errorKind: 'USER_NOT_SPECIFIED' });
  const off = freezeResult({ value: offValue, enabled: false, reason: 'OFF', variationId: offVariationId });

  const served = (index: number, r: Mutable<EvaluationResult>): EvaluationResult =>
    freezeResult({ ...r, value: variationValues[index] as JsonValue, variationId: variationIds[index] as string });

  // Targets: one map lookup per kind replaces scanning every target's list. LaunchDarkly's order:
  // `targets` in order, each of its kind (default user); or, when there are `contextTargets`, those
  // in order, where an entry of kind user stands for the first `targets` entry of its variation.
  const targetResults = new Map<string, Map<string, TargetHit>>();
  const targetResultByVariation = new Map<unknown, EvaluationResult>();
  const addTarget = (t: Record<string, unknown>, kind: string, order: number): void => {
    let result = targetResultByVariation.get(t.variationId);
    if (result === undefined) {
      const index = typeof t.variationId === 'string' ? indexById.get(t.variationId) : undefined;
      result = index === undefined ? malformed : served(index, { value: null, enabled: true, reason: 'TARGET_MATCH' });
      targetResultByVariation.set(t.variationId, result);
    }
    let byKey = targetResults.get(kind);
    if (byKey === undefined) targetResults.set(kind, (byKey = new Map()));
    const hit: TargetHit = { order, result };
    for (const contextKey of t.values as unknown[]) {
      // Earlier targets win when a key is listed twice, as LaunchDarkly scans targets in order.
      if (typeof contextKey === 'string' && !byKey.has(contextKey)) byKey.set(contextKey, hit);
    }
  };
  const targetList = asArray(flag.targets, bad).filter((t): t is Record<string, unknown> => {
    if (isPlainObject(t) && Array.isArray(t.values)) return true;
    bad();
    return false;
  });
  const contextTargets = asArray(flag.contextTargets, bad);
  if (contextTargets.length === 0) targetList.forEach((t, i) => addTarget(t, contextKindOf(t.contextKind), i));
  contextTargets.forEach((t, i) => {
    if (!isPlainObject(t) || !Array.isArray(t.values)) return bad();
    const kind = contextKindOf(t.contextKind);
    if (kind !== USER_KIND) return addTarget(t, kind, i);
    const userTarget = targetList.find((u) => u.variationId === t.variationId);
    if (userTarget !== undefined) addTarget(userTarget, contextKindOf(userTarget.contextKind), i);
  });

  const compileRollout = (
    rollout: Record<string, unknown>,
    slotResult: (index: number) => EvaluationResult,
  ): CompiledRollout | EvaluationResult => {
    const slots = asArray(rollout.variations, bad);
    if (slots.length === 0) return malformed;
    // bucketBy is a literal name without a contextKind, a reference with one (as clause attributes);
    // absent (or '', as LaunchDarkly reads it) it is the key of the rollout's context kind.
    const bucketBy = rollout.bucketBy === undefined || rollout.bucketBy === null || rollout.bucketBy === '' ? 'key' : rollout.bucketBy;
    const attr = parseClauseAttribute(bucketBy, rollout.contextKind);
    if (attr.kind === ATTR_INVALID) return malformed;
    const seed = typeof rollout.seed === 'number' ? rollout.seed : undefined;
    const cumulative: number[] = [];
    const results: EvaluationResult[] = [];
    let total = 0;
    for (const slot of slots) {
      if (!isPlainObject(slot)) {
        bad();
        return malformed;
      }
      const w = slot.weight;
      total += typeof w === 'number' && w > 0 && Number.isFinite(w) ? w : 0;
      cumulative.push(total);
      const index = typeof slot.variationId === 'string' ? indexById.get(slot.variationId) : undefined;
      results.push(index === undefined ? malformed : slotResult(index));
    }
    return { attr, kind: contextKindOf(rollout.contextKind), prefix: hashPrefix(key, salt, seed), total, cumulative, results };
  };

  const rules: CompiledRule[] = [];
  const ruleList = asArray(flag.rules, bad);
  ruleList.forEach((rule, ruleIndex) => {
    if (!isPlainObject(rule) || !Array.isArray(rule.clauses)) {
      bad();
      return;
    }
    const clauses = compileClauses(rule.clauses as unknown[], bad);
    // LaunchDarkly's per-environment fallthrough, as the import carries it: answered as one.
    const isFallthrough = rule.id === FALLTHROUGH_RULE_ID && clauses.length === 0 && ruleIndex === ruleList.length - 1;
    const match = (): Mutable<EvaluationResult> => {
      if (isFallthrough) return { value: null, enabled: true, reason: 'FALLTHROUGH' };
      const r: Mutable<EvaluationResult> = { value: null, enabled: true, reason: 'RULE_MATCH' };
      if (typeof rule.id === 'string') r.ruleId = rule.id;
      r.ruleIndex = ruleIndex;
      return r;
    };
    // A fixed variation wins over a rollout when both are present, as in LaunchDarkly.
    if (rule.variationId !== undefined && rule.variationId !== null) {
      const index = typeof rule.variationId === 'string' ? indexById.get(rule.variationId) : undefined;
      rules.push({ clauses, result: index === undefined ? malformed : served(index, match()), rollout: null });
    } else if (isPlainObject(rule.rollout)) {
      const rollout = compileRollout(rule.rollout, (index) => served(index, { ...match(), inRollout: true }));
      rules.push('prefix' in rollout ? { clauses, result: null, rollout } : { clauses, result: rollout, rollout: null });
    } else {
      if (rule.rollout !== undefined && rule.rollout !== null) bad();
      rules.push({ clauses, result: malformed, rollout: null });
    }
  });

  const prerequisites: CompiledPrerequisite[] = [];
  for (const p of asArray(flag.prerequisites, bad)) {
    if (!isPlainObject(p) || typeof p.key !== 'string' || typeof p.variationId !== 'string') {
      bad();
      continue;
    }
    prerequisites.push({
      key: p.key,
      variationId: p.variationId,
      failed: freezeResult({
        value: offValue,
        enabled: true,
        reason: 'PREREQUISITE_FAILED',
        variationId: offVariationId,
        prerequisiteKey: p.key,
      }),
      malformed: freezeResult({ ...malformed, prerequisiteKey: p.key }),
    });
  }

  // Fallthrough: a rollout over the variations' own weights when any is positive, else defaultValue.
  let fallthrough: CompiledRollout | null = null;
  if (weights.some((w) => w > 0)) {
    let total = 0;
    const cumulative = weights.map((w) => (total += w));
    fallthrough = {
      attr: KEY_REF,
      kind: USER_KIND,
      prefix: hashPrefix(key, salt),
      total,
      cumulative,
      results: variationIds.map((_, index) =>
        served(index, { value: null, enabled: true, reason: 'FALLTHROUGH', inRollout: true }),
      ),
    };
  }

  const plan: FlagPlan = {
    usable,
    off,
    malformed,
    userNotSpecified,
    prerequisites,
    targets: targetResults.size === 0 ? null : targetResults,
    userTargets: resultsOf(targetResults.get(USER_KIND)),
    rules,
    fallthrough,
    fallthroughDefault: freezeResult({ value: defaultValue, enabled: true, reason: 'FALLTHROUGH' }),
  };
  return new CompiledFlag(key, type, enabled, version, plan, clientSideAvailabilityOf(flag.clientSideAvailability));
}
