/**
 * The stored shape of a flag as seen in one environment (CONTRACT.md section 5), and the shape of
 * an evaluation result. Other apps persist flags in exactly this shape, so it stays plain JSON.
 */

import type { EvaluationErrorKind, EvaluationReason, FlagType, JsonValue } from '@flagship/domain';

// The vocabulary is the domain's (the one source); the evaluator re-exports it for its callers.
export type { EvaluationErrorKind, EvaluationReason, FlagType, JsonValue } from '@flagship/domain';
export { FLAG_TYPES } from '@flagship/domain';

/**
 * LaunchDarkly's clause operators, with LaunchDarkly's semantics (see operators.ts). `segmentMatch`
 * matches when the context is in any of the segments its values name; its attribute is ignored.
 */
export const OPERATORS = [
  'in',
  'startsWith',
  'endsWith',
  'contains',
  'matches',
  'lessThan',
  'lessThanOrEqual',
  'greaterThan',
  'greaterThanOrEqual',
  'before',
  'after',
  'semVerEqual',
  'semVerLessThan',
  'semVerGreaterThan',
  'segmentMatch',
] as const;
export type Operator = (typeof OPERATORS)[number];

export interface Variation {
  id: string;
  name: string;
  value: JsonValue;
  description?: string;
  /** Relative weight of the fallthrough rollout; 0 everywhere means "serve defaultValue". */
  weight: number;
}

export interface Clause {
  /**
   * Without `contextKind`: a context attribute's name, taken literally (`/a` is the attribute named
   * "/a"), `key` for the context key. With `contextKind`: an attribute reference (`/a/b` reads
   * nested objects, `~1` escapes `/`, `~0` escapes `~`). As in LaunchDarkly.
   */
  attribute: string;
  /** The context kind read (absent: `user`); when set, `attribute` is an attribute reference. */
  contextKind?: string;
  op: Operator;
  values: JsonValue[];
  negate?: boolean;
}

export interface WeightedVariation {
  variationId: string;
  /** Relative: weights 1 and 3 split 25/75. */
  weight: number;
}

export interface Rollout {
  variations: WeightedVariation[];
  /** Attribute hashed for bucketing; default `key`. Literal or a reference, as a clause's `attribute`. */
  bucketBy?: string;
  /**
   * The context kind bucketed (absent: `user`); when set, `bucketBy` is an attribute reference. A
   * context without that kind takes bucket 0 (the first slice with weight), as in LaunchDarkly.
   */
  contextKind?: string;
  /** When set and non-zero, replaces `{flagKey}.{salt}` in the hash input. */
  seed?: number;
}

export interface Rule {
  id: string;
  description?: string;
  clauses: Clause[];
  variationId?: string;
  rollout?: Rollout;
}

export interface Target {
  variationId: string;
  /** Context keys (of `contextKind`). */
  values: string[];
  /** The kind of the keys; absent: `user`. */
  contextKind?: string;
}

/**
 * LaunchDarkly's `contextTargets`: individual targets per context kind. When a flag has any, they
 * replace `targets` in the order of evaluation, and an entry of kind `user` stands for the first
 * `targets` entry serving its variation (its own values are not read), as LaunchDarkly does.
 */
export interface ContextTarget {
  contextKind: string;
  variationId: string;
  /** Keys of contexts of `contextKind`. */
  values: string[];
}

export interface Prerequisite {
  /** Key of another flag in the same environment. */
  key: string;
  /** The variation that flag must serve for this one to be evaluated further. */
  variationId: string;
}

/**
 * Which client-side keys may evaluate a flag (LaunchDarkly's `clientSideAvailability`, per flag, not
 * per environment): `usingEnvironmentId` for browser keys, `usingMobileKey` for mobile keys. A flag
 * without it is available to neither: server keys only.
 */
export interface ClientSideAvailability {
  usingEnvironmentId: boolean;
  usingMobileKey: boolean;
}

/** One flag as seen in ONE environment. */
export interface FlagDefinition {
  key: string;
  type: FlagType;
  defaultValue: JsonValue;
  variations: Variation[];
  enabled: boolean;
  /** Served when off or a prerequisite fails; undefined means `false` for booleans, else `defaultValue`. */
  offValue?: JsonValue;
  targets: Target[];
  /** Targets of other context kinds (LaunchDarkly's `contextTargets`). */
  contextTargets?: ContextTarget[];
  rules: Rule[];
  prerequisites: Prerequisite[];
  /** Bucketing salt; absent means the flag key, '' is hashed as it is (LaunchDarkly's unsalted flags). */
  salt?: string;
  version?: number;
  /** Absent: server keys only (both false). */
  clientSideAvailability?: ClientSideAvailability;
}

/** Keys of one context kind a segment includes or excludes (LaunchDarkly's `includedContexts`). */
export interface SegmentTarget {
  contextKind: string;
  values: string[];
}

/**
 * A segment rule (LaunchDarkly's semantics): every clause matches, then, when `weight` is set, the
 * context's bucket (by `bucketBy` of `rolloutContextKind`, salted with the segment's key and salt)
 * is below `weight`, LaunchDarkly's absolute 0-100000. No clauses: matches every context.
 */
export interface SegmentRule {
  id: string;
  clauses: Clause[];
  weight?: number;
  bucketBy?: string;
  rolloutContextKind?: string;
}

/**
 * A segment as seen in ONE environment (CONTRACT.md section 10). `included`/`excluded` are user
 * keys; `includedContexts`/`excludedContexts` the keys of other kinds. Included wins over excluded,
 * excluded over rules, as in LaunchDarkly. Flags use it through the `segmentMatch` operator.
 */
export interface SegmentDefinition {
  key: string;
  name: string;
  description?: string;
  included: string[];
  excluded: string[];
  includedContexts: SegmentTarget[];
  excludedContexts: SegmentTarget[];
  rules: SegmentRule[];
  /** Absent: the segment key. */
  salt?: string;
  version?: number;
}

/**
 * A context (context.ts): single-kind `{kind?, key, ...attributes}` (no kind: `user`; the key is
 * `key`, else `targetingKey`, else `userId`, the first that is a non-empty string) or multi-kind
 * `{kind: "multi", <kind>: {key, ...attributes}, ...}`.
 */
export type EvaluationContext = Record<string, unknown>;

/**
 * Results are precomputed at compile time and shared between calls, so they are frozen (and so is
 * `value`): copy before changing anything.
 */
export interface EvaluationResult {
  readonly value: JsonValue;
  /** The flag's own on/off switch in this environment (true for PREREQUISITE_FAILED). */
  readonly enabled: boolean;
  readonly reason: EvaluationReason;
  readonly variationId?: string;
  readonly ruleId?: string;
  readonly ruleIndex?: number;
  /** True when a percentage rollout (a rule's or the fallthrough's) chose the variation. */
  readonly inRollout?: boolean;
  readonly errorKind?: EvaluationErrorKind;
  /** The prerequisite that failed, or whose evaluation was malformed (a cycle, say). */
  readonly prerequisiteKey?: string;
}

/** Anything that finds compiled flags by key: a CompiledFlagSet, or a plain Map. */
export interface CompiledFlagResolver<F> {
  get(key: string): F | undefined;
}
