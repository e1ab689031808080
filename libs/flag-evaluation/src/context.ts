import { isPlainObject } from './json-value';

/**
 * Contexts with kinds, as LaunchDarkly defines them (CONTRACT.md section 5):
 * - a single-kind context `{kind, key, ...attributes}`; without `kind` (or with a null one) it is a
 *   `user`, so the seed's contexts keep their answers. Its key is `key`, else `targetingKey`
 *   (OpenFeature), else `userId` (the management API's evaluate body).
 * - a multi-kind context `{kind: "multi", user: {key, ...}, organization: {key, ...}}`: one object per
 *   kind, each with a non-empty string `key` (no fallbacks inside: that is LaunchDarkly's shape).
 * A kind matches /^[A-Za-z0-9._-]+$/ and is not `kind`; `multi` is not a kind inside a multi-kind
 * context. A multi-kind context of one kind is that single-kind context, as in LaunchDarkly.
 */

export const USER_KIND = 'user';
export const MULTI_KIND = 'multi';
const KIND_PATTERN = /^[A-Za-z0-9._-]+$/;
/**
 * LaunchDarkly sets no bound; contexts carry a handful of kinds. A bound keeps the per-evaluation
 * check of a multi-kind context (every kind is validated, as LaunchDarkly does) small.
 */
export const MAX_CONTEXT_KINDS = 100;

/** A context problem, by path: `kind`, `key`, `organization.key`... */
export interface ContextProblem {
  path: string;
  message: string;
}

/** Whether `kind` can name a context kind (LaunchDarkly's rule; `multi` is checked where it matters). */
export function isValidContextKind(kind: unknown): kind is string {
  return typeof kind === 'string' && kind !== 'kind' && KIND_PATTERN.test(kind);
}

/**
 * The key of a single-kind context: `key`, else `targetingKey`, else `userId`, the first that is a
 * non-empty string (LaunchDarkly refuses empty keys too).
 */
export function singleContextKey(c: Record<string, unknown>): string | undefined {
  let k = c.key;
  if (typeof k === 'string' && k !== '') return k;
  k = c.targetingKey;
  if (typeof k === 'string' && k !== '') return k;
  k = c.userId;
  if (typeof k === 'string' && k !== '') return k;
  return undefined;
}

/**
 * Why `ctx` is not a context, or undefined when it is one. For the seed's routes (400 naming the
 * field) and OFREP (INVALID_CONTEXT); the evaluator answers such a context ERROR/USER_NOT_SPECIFIED.
 */
export function checkEvaluationContext(ctx: unknown): ContextProblem | undefined {
  if (!isPlainObject(ctx)) return { path: '', message: 'must be an object' };
  const kind = ctx.kind;
  if (kind === undefined || kind === null || (kind !== MULTI_KIND && isValidContextKind(kind))) {
    return singleContextKey(ctx) === undefined ? { path: 'key', message: 'must be a non-empty string (the context key)' } : undefined;
  }
  if (kind !== MULTI_KIND) {
    return { path: 'kind', message: "must match /^[A-Za-z0-9._-]+$/ and not be 'kind' ('multi' for a multi-kind context; absent means 'user')" };
  }
  let count = 0;
  for (const k in ctx) {
    if (k === 'kind' || !Object.hasOwn(ctx, k)) continue;
    if (++count > MAX_CONTEXT_KINDS) return { path: '', message: `a multi-kind context holds at most ${MAX_CONTEXT_KINDS} kinds` };
    if (k === MULTI_KIND) return { path: k, message: "'multi' is not a context kind inside a multi-kind context" };
    if (!isValidContextKind(k)) return { path: k, message: 'is not a valid context kind (letters, digits, ., _ and -)' };
    const part = ctx[k];
    if (!isPlainObject(part)) return { path: k, message: 'must be an object: the context of that kind' };
    const key = part.key;
    if (typeof key !== 'string' || key === '') return { path: `${k}.key`, message: 'must be a non-empty string (the context key)' };
  }
  if (count === 0) return { path: '', message: 'a multi-kind context must hold at least one kind' };
  return undefined;
}

/** The kinds of a valid context, in its order (for display and tests; the evaluator reads them in place). */
export function contextKindsOf(ctx: Record<string, unknown>): string[] {
  if (ctx.kind !== MULTI_KIND) return [typeof ctx.kind === 'string' ? ctx.kind : USER_KIND];
  return Object.keys(ctx).filter((k) => k !== 'kind');
}

/**
 * OpenFeature's flat evaluation context mapped onto a LaunchDarkly context, as LaunchDarkly's
 * OpenFeature providers map it:
 * - `targetingKey` is the key (`key` is taken when there is no `targetingKey`), and every other
 *   attribute is an attribute of the context;
 * - `kind` selects the kind (absent: `user`);
 * - `kind: "multi"` makes a multi-kind context: each attribute holding an object is the context of
 *   that kind (its `targetingKey` or `key` is its key); the others are dropped, since a multi-kind
 *   context has no top-level attributes.
 * The result is checked with checkEvaluationContext by the caller (OFREP answers INVALID_CONTEXT).
 */
export function contextFromOpenFeature(flat: Record<string, unknown>): Record<string, unknown> {
  if (flat.kind === MULTI_KIND) {
    const out: Record<string, unknown> = { kind: MULTI_KIND };
    for (const [kind, value] of Object.entries(flat)) {
      if (kind === 'kind' || kind === 'targetingKey' || !isPlainObject(value)) continue;
      out[kind] = singleFromOpenFeature(value, kind);
    }
    return out;
  }
  return singleFromOpenFeature(flat, flat.kind === undefined || flat.kind === null ? USER_KIND : flat.kind);
}

function singleFromOpenFeature(flat: Record<string, unknown>, kind: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(flat)) if (name !== 'targetingKey' && name !== 'kind') out[name] = value;
  const key = typeof flat.targetingKey === 'string' && flat.targetingKey !== '' ? flat.targetingKey : flat.key;
  if (key !== undefined) out.key = key;
  out.kind = kind;
  return out;
}

