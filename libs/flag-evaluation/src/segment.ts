import { hashPrefix } from './bucketing';
import { USER_KIND } from './context';
import { asArray } from './compile';
import { isPlainObject } from './json-value';
import { type AttributeRef, type CompiledClause, compileClauses, contextKindOf, parseClauseAttribute } from './operators';
import type { SegmentDefinition } from './types';

/**
 * A segment compiled once, as flags are (compile.ts): included and excluded keys become one Set per
 * context kind (a segment of 10,000 keys is a set lookup, not a scan), clauses are compiled, and a
 * rule's weight becomes the bucket below which it matches. Compiling never throws; data not shaped
 * like a segment makes every flag that reaches it through segmentMatch MALFORMED_FLAG.
 */

/** A segment rule's `weight` is LaunchDarkly's absolute scale: 100000 is everyone. */
export const SEGMENT_WEIGHT_SCALE = 100000;

/**
 * How deep segmentMatch may nest (a segment's rule naming a segment naming a segment...). Checked at
 * write; deeper stored data is MALFORMED_FLAG at evaluation, which also keeps the recursion shallow.
 */
export const MAX_SEGMENT_DEPTH = 10;

export interface CompiledSegmentRule {
  readonly clauses: readonly CompiledClause[];
  /** False: the clauses decide. True: the context's bucket must also be below `threshold`. */
  readonly weighted: boolean;
  /** weight / 100000, compared as LaunchDarkly compares it (bucket < weight / 100000). */
  readonly threshold: number;
  readonly attr: AttributeRef;
  /** The kind bucketed (`rolloutContextKind`, default user). */
  readonly kind: string;
  /** `{segmentKey}.{salt}.` */
  readonly prefix: string;
}

export interface SegmentPlan {
  readonly usable: boolean;
  /** Context kind -> keys; null when empty. Included wins over excluded, excluded over rules. */
  readonly included: ReadonlyMap<string, ReadonlySet<string>> | null;
  readonly excluded: ReadonlyMap<string, ReadonlySet<string>> | null;
  readonly rules: readonly CompiledSegmentRule[];
}

export class CompiledSegment {
  /** Set while this segment is being matched: meeting it again is a segmentMatch cycle. @internal */
  visiting = false;
  /** The evaluation whose match memoResult holds (evaluator.ts' epoch). @internal */
  memoEpoch = 0;
  /** @internal */
  memoResult = 0;

  constructor(
    readonly key: string,
    readonly version: number | undefined,
    /** @internal the plan; its shape is not part of the API. */
    readonly plan: SegmentPlan,
  ) {}
}

export function compileSegment(definition: SegmentDefinition): CompiledSegment {
  let usable = true;
  const bad = (): void => {
    usable = false;
  };
  const raw: unknown = definition;
  const segment: Record<string, unknown> = isPlainObject(raw) ? raw : {};
  if (!isPlainObject(raw) || typeof segment.key !== 'string') bad();
  const key = typeof segment.key === 'string' ? segment.key : '';
  // As a flag's: absent is the key, '' is hashed as it is (LaunchDarkly's segments without salt).
  const salt = typeof segment.salt === 'string' ? segment.salt : key;

  const keys = (userKeys: unknown, byKind: unknown): ReadonlyMap<string, ReadonlySet<string>> | null => {
    const out = new Map<string, Set<string>>();
    const add = (kind: string, values: unknown): void => {
      let set = out.get(kind);
      if (set === undefined) out.set(kind, (set = new Set()));
      for (const k of asArray(values, bad)) if (typeof k === 'string') set.add(k);
    };
    add(USER_KIND, userKeys);
    for (const t of asArray(byKind, bad)) {
      if (!isPlainObject(t)) bad();
      else add(contextKindOf(t.contextKind), t.values);
    }
    for (const [kind, set] of out) if (set.size === 0) out.delete(kind);
    return out.size === 0 ? null : out;
  };

  const rules: CompiledSegmentRule[] = [];
  for (const r of asArray(segment.rules, bad)) {
    if (!isPlainObject(r) || !Array.isArray(r.clauses)) {
      bad();
      continue;
    }
    const clauses = compileClauses(r.clauses as unknown[], bad);
    const weight = typeof r.weight === 'number' ? r.weight : undefined;
    if (r.weight !== undefined && r.weight !== null && weight === undefined) bad();
    // bucketBy as a rollout's: absent or '' is the key; literal without rolloutContextKind, a reference with one.
    const bucketBy = typeof r.bucketBy === 'string' && r.bucketBy !== '' ? r.bucketBy : 'key';
    rules.push({
      clauses,
      weighted: weight !== undefined,
      threshold: weight === undefined ? 0 : weight / SEGMENT_WEIGHT_SCALE,
      attr: parseClauseAttribute(bucketBy, r.rolloutContextKind),
      kind: contextKindOf(r.rolloutContextKind),
      prefix: hashPrefix(key, salt),
    });
  }

  const version = typeof segment.version === 'number' ? segment.version : undefined;
  return new CompiledSegment(key, version, {
    usable,
    included: keys(segment.included, segment.includedContexts),
    excluded: keys(segment.excluded, segment.excludedContexts),
    rules,
  });
}
