import { contextKindProblem, USER_KIND, type EvaluationResult, type Flag, type JsonValue } from '../api';

export type ContextObject = Record<string, JsonValue>;

const isObject = (v: unknown): v is ContextObject => typeof v === 'object' && v !== null && !Array.isArray(v);
const keyProblem = (v: unknown, where: string) => (typeof v === 'string' && v !== '' ? null : `${where}key must be a non-empty string.`);

/**
 * A LaunchDarkly context typed as JSON, checked as LaunchDarkly's SDKs check one: single-kind
 * `{kind?, key, ...}` (no kind: user) or multi-kind `{kind: "multi", <kind>: {key, ...}, ...}`, at
 * least one kind, none of them `multi` or `kind`. Returns the context or why it is not one.
 */
export function parseContext(text: string): { context: ContextObject } | { error: string } {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return { error: 'The context must be valid JSON.' };
  }
  if (!isObject(v)) return { error: 'The context must be a JSON object.' };
  const kind = v['kind'] ?? USER_KIND;
  if (typeof kind !== 'string') return { error: 'kind must be a string.' };
  if (kind !== 'multi') {
    const problem = contextKindProblem(kind);
    if (problem) return { error: `kind: ${problem}` };
    const k = keyProblem(v['key'], '');
    return k ? { error: k } : { context: v };
  }
  const kinds = Object.keys(v).filter((k) => k !== 'kind');
  if (kinds.length === 0) return { error: 'A multi-kind context needs at least one kind.' };
  for (const k of kinds) {
    const problem = contextKindProblem(k);
    if (problem) return { error: `${k}: ${problem}` };
    const part = v[k];
    if (!isObject(part)) return { error: `${k} must be an object with a key.` };
    if (part['kind'] !== undefined) return { error: `${k}.kind is not allowed: the property's name is the kind.` };
    const kp = keyProblem(part['key'], `${k}.`);
    if (kp) return { error: kp };
  }
  return { context: v };
}

/** Each kind of a context with its attributes (`key` among them). */
export function kindsOfContext(c: ContextObject): Map<string, ContextObject> {
  const kind = typeof c['kind'] === 'string' ? c['kind'] : USER_KIND;
  if (kind !== 'multi') return new Map([[kind, c]]);
  return new Map(Object.entries(c).filter((e): e is [string, ContextObject] => e[0] !== 'kind' && isObject(e[1])));
}

/**
 * Which of the context's kinds decided the answer, in words: the kind whose key a target lists, the
 * kinds a matched rule's clauses read (and the segments it named), or the kind a rollout bucketed.
 * Null when no kind decided it (off, fallthrough to one variation, an error).
 */
export function matchedKind(flag: Flag, result: EvaluationResult, context: ContextObject): string | null {
  const kinds = kindsOfContext(context);
  const keyOf = (kind: string) => {
    const k = kinds.get(kind)?.['key'];
    return typeof k === 'string' ? k : undefined;
  };
  const withKey = (kind: string) => (keyOf(kind) !== undefined ? `${kind} (key ${keyOf(kind)})` : kind);
  if (result.reason === 'TARGET_MATCH') {
    const t = flag.targets.find((x) => x.variationId === result.variationId && keyOf(x.contextKind ?? USER_KIND) !== undefined && x.values.includes(keyOf(x.contextKind ?? USER_KIND)!));
    return t ? withKey(t.contextKind ?? USER_KIND) : null;
  }
  if (result.reason !== 'RULE_MATCH' || result.ruleIndex === undefined) return null;
  const rule = flag.rules[result.ruleIndex];
  if (!rule) return null;
  const read = [...new Set(rule.clauses.filter((c) => c.op !== 'segmentMatch').map((c) => c.contextKind ?? USER_KIND))];
  const segments = rule.clauses.filter((c) => c.op === 'segmentMatch').flatMap((c) => c.values.map(String));
  const parts = [...read.map(withKey), ...(segments.length > 0 ? [`in segment ${segments.join(' or ')}`] : [])];
  if (rule.rollout) parts.push(`bucketed by ${withKey(rule.rollout.contextKind ?? USER_KIND)}`);
  return parts.length > 0 ? parts.join('; ') : null;
}
