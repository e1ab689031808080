import type { FlagDefinition, JsonValue, Rollout } from './types';

/**
 * What the flag serves to every context when its definition leaves no choice, or undefined when
 * two contexts may get different values: off (the off value); or on with no prerequisites nor
 * individual targets and the first rule reached by everyone (no rules: the fallthrough over the
 * variations' weights; a rule without clauses: that rule, as LaunchDarkly's imported fallthrough
 * is) serving one variation, or a rollout with one variation of non-zero weight. Read at write
 * time to tell since when a flag has been "fully rolled out" (the stale-flags list).
 */
export function servesOneValue(flag: FlagDefinition): { value: JsonValue } | undefined {
  if (!flag.enabled) return { value: flag.offValue ?? (flag.type === 'boolean' ? false : flag.defaultValue) };
  if ((flag.prerequisites ?? []).length > 0 || (flag.targets ?? []).length > 0 || (flag.contextTargets ?? []).length > 0) return undefined;
  const valueOf = (id: string | undefined): { value: JsonValue } | undefined => {
    const v = id === undefined ? undefined : flag.variations.find((x) => x.id === id);
    return v === undefined ? undefined : { value: v.value };
  };
  const rules = flag.rules ?? [];
  if (rules.length > 0) {
    const first = rules[0]!;
    // A rule with clauses splits contexts (some match, the rest go on): more than one value may be served.
    if ((first.clauses ?? []).length > 0) return undefined;
    if (typeof first.variationId === 'string') return valueOf(first.variationId);
    return first.rollout ? valueOf(onlyWeighted(first.rollout)) : undefined;
  }
  const weighted = flag.variations.filter((v) => positive(v.weight));
  if (weighted.length === 0) return { value: flag.defaultValue };
  return weighted.length === 1 ? { value: weighted[0]!.value } : undefined;
}

/** The one variation of a rollout that has weight, or undefined when there are several (or none). */
function onlyWeighted(rollout: Rollout): string | undefined {
  const ids = new Set((rollout.variations ?? []).filter((s) => positive(s.weight)).map((s) => s.variationId));
  return ids.size === 1 ? [...ids][0] : undefined;
}

const positive = (w: unknown): boolean => typeof w === 'number' && Number.isFinite(w) && w > 0;
