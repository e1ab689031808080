import { spend } from './budget';
import { toInstant } from './dates';
import { isPlainObject, jsonEquals, toFrozenJson } from './json-value';
import { compileRegex, type LinearRegex, MAX_REGEX_INPUT_LENGTH, REGEX_INVALID } from './regex';
import { compareSemVer, parseSemVer, type SemVer } from './semver';
import { MULTI_KIND, USER_KIND } from './context';
import type { JsonValue, Operator } from './types';

/**
 * Clause matching with LaunchDarkly's semantics. Everything that depends only on the flag (regexes,
 * semvers, instants, sets) is prepared once by compileClause; matchClause only reads the context.
 *
 * - `in` is strict equality: 1 is not "1" (a Set keeps them apart); objects and arrays compare
 *   structurally, as in LaunchDarkly's Go/Java SDKs.
 * - string operators need a string on both sides, numeric operators a number on both sides.
 * - before/after take epoch milliseconds or RFC 3339 strings; semVer* take padded SemVer strings.
 * - an invalid regex, date or version in the clause never matches; so does a pattern the linear
 *   engine refuses (regex.ts), and `matches` reads strings up to MAX_REGEX_INPUT_LENGTH only.
 * - a clause matches when any clause value matches; an array attribute when any element does.
 * - negate inverts, but a missing (undefined or null) attribute never matches, negated or not.
 * - an operator this version does not know never matches a value (so negated, it matches), as in
 *   LaunchDarkly; validateFlagDefinition refuses it before it is stored (values an operator can
 *   never use are only warned about, as LaunchDarkly stores them).
 */

// Operator codes: a switch over small integers is the cheapest dispatch on the hot path.
const OP_IN = 0;
const OP_STARTS_WITH = 1;
const OP_ENDS_WITH = 2;
const OP_CONTAINS = 3;
const OP_MATCHES = 4;
const OP_LESS_THAN = 5;
const OP_LESS_THAN_OR_EQUAL = 6;
const OP_GREATER_THAN = 7;
const OP_GREATER_THAN_OR_EQUAL = 8;
const OP_BEFORE = 9;
const OP_AFTER = 10;
const OP_SEMVER_EQUAL = 11;
const OP_SEMVER_LESS_THAN = 12;
const OP_SEMVER_GREATER_THAN = 13;
/** Matched by the evaluator (it needs the segments); never by matchValue. */
export const OP_SEGMENT_MATCH = 14;
const OP_UNKNOWN = -1;

const OPERATOR_CODES: ReadonlyMap<string, number> = new Map<Operator, number>([
  ['in', OP_IN],
  ['startsWith', OP_STARTS_WITH],
  ['endsWith', OP_ENDS_WITH],
  ['contains', OP_CONTAINS],
  ['matches', OP_MATCHES],
  ['lessThan', OP_LESS_THAN],
  ['lessThanOrEqual', OP_LESS_THAN_OR_EQUAL],
  ['greaterThan', OP_GREATER_THAN],
  ['greaterThanOrEqual', OP_GREATER_THAN_OR_EQUAL],
  ['before', OP_BEFORE],
  ['after', OP_AFTER],
  ['semVerEqual', OP_SEMVER_EQUAL],
  ['semVerLessThan', OP_SEMVER_LESS_THAN],
  ['semVerGreaterThan', OP_SEMVER_GREATER_THAN],
  ['segmentMatch', OP_SEGMENT_MATCH],
]);

export function isOperator(op: unknown): op is Operator {
  return typeof op === 'string' && OPERATOR_CODES.has(op);
}

/**
 * Why a clause value can never match its operator (LaunchDarkly stores such values and evaluates
 * them as non-matching), or undefined when it can.
 */
export function clauseValueProblem(op: Operator, value: unknown): string | undefined {
  switch (op) {
    case 'in':
      // A null attribute counts as missing, and a missing attribute never matches.
      return value === null ? 'is null' : undefined;
    case 'startsWith':
    case 'endsWith':
    case 'contains':
      return typeof value === 'string' ? undefined : 'must be a string';
    case 'matches':
      if (typeof value !== 'string') return 'must be a string';
      // Only an invalid pattern is a warning here; what the linear engine refuses is an error (validate.ts).
      return compileRegex(value) === REGEX_INVALID ? REGEX_INVALID : undefined;
    case 'lessThan':
    case 'lessThanOrEqual':
    case 'greaterThan':
    case 'greaterThanOrEqual':
      return typeof value === 'number' && Number.isFinite(value) ? undefined : 'must be a number';
    case 'before':
    case 'after':
      return toInstant(value) === undefined ? 'must be epoch milliseconds or an RFC 3339 date-time' : undefined;
    case 'semVerEqual':
    case 'semVerLessThan':
    case 'semVerGreaterThan':
      return parseSemVer(value) === undefined ? 'must be a semantic version such as 1.2.3 (no leading v)' : undefined;
    case 'segmentMatch':
      return typeof value === 'string' && value !== '' ? undefined : 'must be a segment key';
    default:
      return 'unknown operator';
  }
}

// ---------------------------------------------------------------------------------------------
// Attribute references

export const ATTR_KEY = 0;
export const ATTR_NAME = 1;
export const ATTR_PATH = 2;
export const ATTR_INVALID = 3;
/** The built-in `kind`: the context's kinds, whatever the clause's contextKind (LaunchDarkly's rule). */
export const ATTR_KIND = 4;
/** The built-in `anonymous`: always a boolean for a kind the context has (`!!anonymous`), as in LaunchDarkly. */
export const ATTR_ANONYMOUS = 5;

/** The default kind: a clause, target or rollout without `contextKind` is about the `user` context. */
export const USER_CONTEXT_KIND = USER_KIND;

/**
 * What a clause's `attribute` (or a rollout's `bucketBy`) names, decided once at compile time, as
 * LaunchDarkly's SDKs decide it:
 * - with no `contextKind`, the attribute is a literal name, even when it starts with `/` (`/a` is
 *   the attribute named "/a"); only an empty name is invalid.
 * - with a `contextKind`, it is an attribute reference: a name not starting with `/` is a top-level
 *   attribute, `/a/b` reads into nested objects (`~1` escapes `/`, `~0` escapes `~`); `//`, a `~`
 *   not followed by 0 or 1, and `/_meta` are invalid.
 * `key` (or `/key`) is the context key; `kind` and `anonymous` are LaunchDarkly's built-ins. An
 * invalid one makes the flag malformed when the evaluation reaches it, as in LaunchDarkly.
 */
export interface AttributeRef {
  readonly kind: number;
  readonly name: string;
  readonly path: readonly string[];
}

const NO_PATH: readonly string[] = Object.freeze([]);
export const KEY_REF: AttributeRef = Object.freeze({ kind: ATTR_KEY, name: 'key', path: NO_PATH });
const KIND_REF: AttributeRef = Object.freeze({ kind: ATTR_KIND, name: 'kind', path: NO_PATH });
const ANONYMOUS_REF: AttributeRef = Object.freeze({ kind: ATTR_ANONYMOUS, name: 'anonymous', path: NO_PATH });
const INVALID_REF: AttributeRef = Object.freeze({ kind: ATTR_INVALID, name: '', path: NO_PATH });

/** An attribute reference (the form a clause with a `contextKind` uses). */
export function parseAttributeRef(attribute: unknown): AttributeRef {
  if (typeof attribute !== 'string' || attribute === '' || attribute === '/') return INVALID_REF;
  // LaunchDarkly's validity rule, for references with and without a leading slash.
  if (attribute.includes('//') || attribute.endsWith('~')) return INVALID_REF;
  if (attribute[0] !== '/') return literalAttribute(attribute);
  const path: string[] = [];
  for (const part of attribute.slice(1).split('/')) {
    if (part === '' || /~[^01]|~$/.test(part)) return INVALID_REF;
    path.push(part.replace(/~1/g, '/').replace(/~0/g, '~'));
  }
  if (path[0] === '_meta') return INVALID_REF; // not addressable, as in LaunchDarkly
  if (path.length === 1) return literalAttribute(path[0] as string);
  return { kind: ATTR_PATH, name: attribute, path };
}

function literalAttribute(name: string): AttributeRef {
  if (name === 'key') return KEY_REF;
  if (name === 'kind') return KIND_REF;
  if (name === 'anonymous') return ANONYMOUS_REF;
  return { kind: ATTR_NAME, name, path: NO_PATH };
}

/** Whether a clause or rollout names a context kind (absent, null and '' do not, as in LaunchDarkly). */
export function namesContextKind(contextKind: unknown): boolean {
  return contextKind !== undefined && contextKind !== null && contextKind !== '';
}

/** The kind a clause, target or rollout is about: its `contextKind`, else `user`. */
export function contextKindOf(contextKind: unknown): string {
  return typeof contextKind === 'string' && contextKind !== '' ? contextKind : USER_KIND;
}

/**
 * The attribute a clause (or a rollout's `bucketBy`) names, given its `contextKind`: a literal name
 * without one, a reference with one.
 */
export function parseClauseAttribute(attribute: unknown, contextKind: unknown): AttributeRef {
  if (!namesContextKind(contextKind)) {
    return typeof attribute === 'string' && attribute !== '' ? literalAttribute(attribute) : INVALID_REF;
  }
  return parseAttributeRef(attribute);
}

/**
 * An own attribute of a context object, or undefined when absent. null counts as absent (as in
 * LaunchDarkly), and inherited members (`toString`, `__proto__`) are not attributes.
 */
function ownAttribute(obj: Record<string, unknown>, name: string): unknown {
  const v = obj[name];
  if (v === undefined || v === null || typeof v === 'function') return undefined;
  if (typeof v === 'object' && !Object.hasOwn(obj, name)) return undefined;
  return v;
}

/** The value `ref` names in the context, or undefined when it is missing. */
export function readAttribute(ctx: Record<string, unknown>, ref: AttributeRef, contextKey: string): unknown {
  switch (ref.kind) {
    case ATTR_KEY:
      return contextKey;
    case ATTR_NAME:
      return ownAttribute(ctx, ref.name);
    case ATTR_ANONYMOUS:
      return !!ctx.anonymous;
    case ATTR_PATH: {
      let current: unknown = ctx;
      const path = ref.path;
      for (let i = 0; i < path.length; i++) {
        // References walk objects only; arrays are not indexed (LaunchDarkly's rule).
        if (typeof current !== 'object' || current === null || Array.isArray(current)) return undefined;
        current = ownAttribute(current as Record<string, unknown>, path[i] as string);
        if (current === undefined) return undefined;
      }
      return current;
    }
    default:
      // ATTR_KIND (a list of kinds) cannot be bucketed, and an invalid reference reads nothing.
      return undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// Contexts of several kinds

/**
 * The context of `kind` in the context being evaluated, or undefined when it has none. `ctx` is that
 * context and `evaluatingKind` its kind: `multi` for a multi-kind context (already checked: every
 * kind an object with a key).
 */
export function kindPresent(kind: string, ctx: Record<string, unknown>, evaluatingKind: string): Record<string, unknown> | undefined {
  if (evaluatingKind !== MULTI_KIND) return kind === evaluatingKind ? ctx : undefined;
  if (kind === 'kind' || !Object.hasOwn(ctx, kind)) return undefined;
  return ctx[kind] as Record<string, unknown>;
}

/** The key of the context of `kind`, or undefined (`contextKey`: the single-kind context's key). */
export function keyOfKind(kind: string, ctx: Record<string, unknown>, contextKey: string, evaluatingKind: string): string | undefined {
  if (evaluatingKind !== MULTI_KIND) return kind === evaluatingKind ? contextKey : undefined;
  return kindPresent(kind, ctx, evaluatingKind)?.key as string | undefined;
}

// ---------------------------------------------------------------------------------------------
// Clauses

export interface CompiledClause {
  readonly attr: AttributeRef;
  /** The context kind the clause reads (`user` without contextKind); for segmentMatch and the built-in `kind`, no kind at all. */
  readonly kind: string;
  /** `segmentMatch`: the segment keys (the evaluator matches these); null for other operators. */
  readonly segmentKeys: readonly string[] | null;
  readonly op: number;
  readonly negate: boolean;
  /** `in`: scalar values (a Set keeps 1 and "1" apart, as strict equality does). */
  readonly scalars: ReadonlySet<unknown>;
  /** `in`: object and array values, compared structurally. */
  readonly composites: readonly JsonValue[];
  /** startsWith / endsWith / contains. */
  readonly strings: readonly string[];
  /** Linear-time (regex.ts). */
  readonly regexes: readonly LinearRegex[];
  /**
   * Numeric and date operators: "a < any value" is "a < the highest value", and so on, so two
   * numbers replace the list (NaN when there is no usable value: every comparison is then false).
   */
  readonly lowest: number;
  readonly highest: number;
  readonly semverKeys: ReadonlySet<string>;
  readonly lowestSemVer: SemVer | null;
  readonly highestSemVer: SemVer | null;
}

const EMPTY_SET: ReadonlySet<never> = new Set<never>();
const EMPTY: readonly never[] = Object.freeze([]);

/**
 * The `kind` of a segmentMatch clause and of a clause on the built-in `kind`: not a valid kind, so
 * never the evaluated context's, and such clauses are matched apart (matchOtherKind).
 */
const SEGMENT_MATCH_KIND = ' segmentMatch';
const KIND_ATTRIBUTE_KIND = ' kind';

type SegmentMatcher = (c: CompiledClause, keys: readonly string[], ctx: Record<string, unknown>, contextKey: string) => number;
let segmentMatcher: SegmentMatcher = () => NO_MATCH;

/** The evaluator matches segmentMatch clauses (it holds the segments); it registers how here. */
export function matchSegmentsWith(matcher: SegmentMatcher): void {
  segmentMatcher = matcher;
}

export const NO_MATCH = 0;
export const MATCH = 1;
/** The clause cannot be evaluated (invalid attribute reference): the flag is malformed. */
export const CLAUSE_ERROR = 2;

/** Compiles a rule's clauses; `bad` is called for each one not even shaped like a clause (it is left out). */
export function compileClauses(clauses: readonly unknown[], bad: () => void): CompiledClause[] {
  const out: CompiledClause[] = [];
  for (const c of clauses) {
    const compiled = compileClause(c);
    if (compiled === undefined) bad();
    else out.push(compiled);
  }
  return out;
}

/** Compiles a clause, or returns undefined when it is not even shaped like one. */
export function compileClause(clause: unknown): CompiledClause | undefined {
  if (!isPlainObject(clause) || !Array.isArray(clause.values)) return undefined;
  const op = typeof clause.op === 'string' ? (OPERATOR_CODES.get(clause.op) ?? OP_UNKNOWN) : OP_UNKNOWN;
  // segmentMatch ignores its attribute, as LaunchDarkly does; every other operator needs one.
  if (op !== OP_SEGMENT_MATCH && typeof clause.attribute !== 'string') return undefined;
  const values: unknown[] = clause.values;
  const scalars = new Set<unknown>();
  const composites: JsonValue[] = [];
  const strings: string[] = [];
  const regexes: LinearRegex[] = [];
  const semverKeys = new Set<string>();
  const segmentKeys: string[] = [];
  let lowest = NaN;
  let highest = NaN;
  let lowestSemVer: SemVer | null = null;
  let highestSemVer: SemVer | null = null;
  const widen = (n: number): void => {
    if (!(n >= lowest)) lowest = n; // also replaces the initial NaN
    if (!(n <= highest)) highest = n;
  };

  for (const value of values) {
    switch (op) {
      case OP_IN: {
        const frozen = toFrozenJson(value);
        if (frozen === undefined) break; // not JSON: cannot equal anything a context holds
        if (typeof frozen === 'object' && frozen !== null) composites.push(frozen);
        else scalars.add(frozen);
        break;
      }
      case OP_STARTS_WITH:
      case OP_ENDS_WITH:
      case OP_CONTAINS:
        if (typeof value === 'string') strings.push(value);
        break;
      case OP_MATCHES: {
        // Compiled once per flag set; a pattern that is invalid or refused never matches.
        const re = typeof value === 'string' ? compileRegex(value) : undefined;
        if (re !== undefined && typeof re !== 'string') regexes.push(re);
        break;
      }
      case OP_LESS_THAN:
      case OP_LESS_THAN_OR_EQUAL:
      case OP_GREATER_THAN:
      case OP_GREATER_THAN_OR_EQUAL:
        if (typeof value === 'number' && !Number.isNaN(value)) widen(value);
        break;
      case OP_BEFORE:
      case OP_AFTER: {
        const t = toInstant(value);
        if (t !== undefined) widen(t);
        break;
      }
      case OP_SEMVER_EQUAL:
      case OP_SEMVER_LESS_THAN:
      case OP_SEMVER_GREATER_THAN: {
        const v = parseSemVer(value);
        if (v === undefined) break;
        semverKeys.add(v.key);
        if (lowestSemVer === null || compareSemVer(v, lowestSemVer) < 0) lowestSemVer = v;
        if (highestSemVer === null || compareSemVer(v, highestSemVer) > 0) highestSemVer = v;
        break;
      }
      case OP_SEGMENT_MATCH:
        if (typeof value === 'string') segmentKeys.push(value);
        break;
      default:
        break;
    }
  }

  const attr = op === OP_SEGMENT_MATCH ? KEY_REF : parseClauseAttribute(clause.attribute, clause.contextKind);
  return {
    attr,
    kind: op === OP_SEGMENT_MATCH ? SEGMENT_MATCH_KIND : attr.kind === ATTR_KIND ? KIND_ATTRIBUTE_KIND : contextKindOf(clause.contextKind),
    segmentKeys: op === OP_SEGMENT_MATCH ? segmentKeys : null,
    op,
    negate: clause.negate === true,
    scalars: scalars.size === 0 ? EMPTY_SET : scalars,
    composites: composites.length === 0 ? EMPTY : composites,
    strings: strings.length === 0 ? EMPTY : strings,
    regexes: regexes.length === 0 ? EMPTY : regexes,
    lowest,
    highest,
    semverKeys: semverKeys.size === 0 ? EMPTY_SET : semverKeys,
    lowestSemVer,
    highestSemVer,
  };
}

function anyComposite(composites: readonly JsonValue[], value: unknown): boolean {
  for (let i = 0; i < composites.length; i++) if (jsonEquals(value, composites[i] as JsonValue)) return true;
  return false;
}

/** Whether one (non-array-expanded) attribute value matches any of the clause's values. */
function matchValue(c: CompiledClause, v: unknown): boolean {
  switch (c.op) {
    case OP_IN:
      if (c.composites.length === 0 || typeof v !== 'object') return c.scalars.has(v);
      spend(c.composites.length);
      return c.scalars.has(v) || anyComposite(c.composites, v);
    case OP_STARTS_WITH: {
      if (typeof v !== 'string') return false;
      const s = c.strings;
      for (let i = 0; i < s.length; i++) if (v.startsWith(s[i] as string)) return true;
      return false;
    }
    case OP_ENDS_WITH: {
      if (typeof v !== 'string') return false;
      const s = c.strings;
      for (let i = 0; i < s.length; i++) if (v.endsWith(s[i] as string)) return true;
      return false;
    }
    case OP_CONTAINS: {
      if (typeof v !== 'string') return false;
      const s = c.strings;
      for (let i = 0; i < s.length; i++) if (v.includes(s[i] as string)) return true;
      return false;
    }
    case OP_MATCHES: {
      // Bounded so that one match stays short even on the worst patterns (docs/flags.md, "Limits of one flag").
      if (typeof v !== 'string' || v.length > MAX_REGEX_INPUT_LENGTH) return false;
      const r = c.regexes;
      spend(r.length * (1 + (v.length >> 2)));
      for (let i = 0; i < r.length; i++) if ((r[i] as LinearRegex).test(v)) return true;
      return false;
    }
    case OP_LESS_THAN:
      return typeof v === 'number' && v < c.highest;
    case OP_LESS_THAN_OR_EQUAL:
      return typeof v === 'number' && v <= c.highest;
    case OP_GREATER_THAN:
      return typeof v === 'number' && v > c.lowest;
    case OP_GREATER_THAN_OR_EQUAL:
      return typeof v === 'number' && v >= c.lowest;
    case OP_BEFORE: {
      if (Number.isNaN(c.highest)) return false; // skip parsing when nothing can match
      const t = toInstant(v);
      return t !== undefined && t < c.highest;
    }
    case OP_AFTER: {
      if (Number.isNaN(c.lowest)) return false;
      const t = toInstant(v);
      return t !== undefined && t > c.lowest;
    }
    case OP_SEMVER_EQUAL: {
      if (c.semverKeys.size === 0) return false;
      const sv = parseSemVer(v);
      return sv !== undefined && c.semverKeys.has(sv.key);
    }
    case OP_SEMVER_LESS_THAN: {
      if (c.highestSemVer === null) return false;
      const sv = parseSemVer(v);
      return sv !== undefined && compareSemVer(sv, c.highestSemVer) < 0;
    }
    case OP_SEMVER_GREATER_THAN: {
      if (c.lowestSemVer === null) return false;
      const sv = parseSemVer(v);
      return sv !== undefined && compareSemVer(sv, c.lowestSemVer) > 0;
    }
    default:
      return false;
  }
}

/**
 * MATCH, NO_MATCH or CLAUSE_ERROR for one clause. `ctx`, `contextKey` and `evaluatingKind` are the
 * context being evaluated, its key and its kind; for a multi-kind context, the context, '' and `multi`.
 */
export function matchClause(c: CompiledClause, ctx: Record<string, unknown>, contextKey: string, evaluatingKind: string): number {
  // The common case (a clause of the context's own kind) pays one comparison; the rest is kept out
  // of this function so that it stays small enough to be inlined where rules are matched.
  return c.kind === evaluatingKind ? matchInContext(c, ctx, contextKey) : matchOtherKind(c, ctx, contextKey, evaluatingKind);
}

/**
 * A clause of another kind than the context's own (or a multi-kind context). segmentMatch clauses
 * carry a kind no context has, so they come here too. The built-in `kind` reads the context's kinds
 * whatever the clause's kind; anything else reads the context of the clause's kind, and a kind the
 * context lacks never matches, negated or not (LaunchDarkly's rule).
 */
function matchOtherKind(c: CompiledClause, ctx: Record<string, unknown>, contextKey: string, evaluatingKind: string): number {
  if (c.segmentKeys !== null) return segmentMatcher(c, c.segmentKeys, ctx, contextKey);
  const attr = c.attr;
  if (attr.kind === ATTR_KIND) return matchKinds(c, ctx, evaluatingKind);
  if (attr.kind === ATTR_INVALID) return CLAUSE_ERROR;
  const other = kindPresent(c.kind, ctx, evaluatingKind);
  return other === undefined ? NO_MATCH : matchInContext(c, other, other.key as string);
}

/** A clause against the context of its kind. */
function matchInContext(c: CompiledClause, ctx: Record<string, unknown>, contextKey: string): number {
  const attr = c.attr;
  let v: unknown;
  // Top-level attributes are the common case: read them inline rather than through readAttribute.
  if (attr.kind === ATTR_NAME) {
    v = ctx[attr.name];
    if (v === undefined || v === null) return NO_MATCH;
    if (typeof v === 'object' || typeof v === 'function') {
      v = ownAttribute(ctx, attr.name);
      if (v === undefined) return NO_MATCH;
    }
  } else if (attr.kind === ATTR_KEY) {
    v = contextKey;
  } else if (attr.kind === ATTR_INVALID) {
    return CLAUSE_ERROR;
  } else {
    v = readAttribute(ctx, attr, contextKey);
    if (v === undefined) return NO_MATCH;
  }
  let matched = false;
  if (Array.isArray(v)) {
    spend(v.length);
    for (let i = 0; i < v.length; i++) {
      if (matchValue(c, v[i])) {
        matched = true;
        break;
      }
    }
  } else {
    matched = matchValue(c, v);
  }
  return matched !== c.negate ? MATCH : NO_MATCH;
}

/** The built-in `kind`: any of the context's kinds matches (a list attribute, so negate applies). */
function matchKinds(c: CompiledClause, ctx: Record<string, unknown>, evaluatingKind: string): number {
  let matched = false;
  if (evaluatingKind !== MULTI_KIND) matched = matchValue(c, evaluatingKind);
  else {
    for (const kind in ctx) {
      if (kind === 'kind' || !Object.hasOwn(ctx, kind)) continue;
      spend(1);
      if (matchValue(c, kind)) {
        matched = true;
        break;
      }
    }
  }
  return matched !== c.negate ? MATCH : NO_MATCH;
}
