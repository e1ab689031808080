import { isDeepStrictEqual } from 'node:util';
import { FLAG_KEY_PATTERN, type FlagType, type JsonValue } from '@flagship/domain';
import {
  ATTR_INVALID,
  type ClientSideAvailability,
  type Clause,
  FALLTHROUGH_RULE_ID,
  isValidContextKind,
  MULTI_KIND,
  OPERATORS,
  parseClauseAttribute,
  type Prerequisite,
  type Rollout,
  type Rule,
  type SegmentDefinition,
  type SegmentRule,
  type SegmentTarget,
  type Target,
  type Variation,
} from '@flagship/flag-evaluation';

/**
 * LaunchDarkly's server-side SDK data (SDK data files, the relay proxy's `/sdk/latest-all`) mapped
 * onto our flag model, with LaunchDarkly's evaluation semantics kept: same values, same variation
 * for every context, same buckets. Pure: the service reads and writes the database.
 *
 * Context kinds, contextTargets (onto `targets` with their kinds, in LaunchDarkly's order) and
 * segments (mapLaunchDarklySegments) map one to one. What the model cannot express (experiments, big
 * segments) is an error naming the flag and the place, so an import never changes what a user is
 * served without saying so.
 */

/** LaunchDarkly's rollout weights are out of this many. */
export const LD_WEIGHT_SCALE = 100_000;


/** Fields of a LaunchDarkly flag that do not change what it serves; accepted and not stored. */
const IGNORED_FLAG_FIELDS = [
  'version',
  'deleted',
  'trackEvents',
  'trackEventsFallthrough',
  'debugEventsUntilDate',
  'samplingRatio',
  'excludeFromSummaries',
  'migration',
  '_meta',
];
const FLAG_FIELDS = new Set([
  'key',
  'on',
  'variations',
  'offVariation',
  'fallthrough',
  'targets',
  'contextTargets',
  'rules',
  'prerequisites',
  'salt',
  'clientSide',
  'clientSideAvailability',
  ...IGNORED_FLAG_FIELDS,
]);
const RULE_FIELDS = new Set(['id', 'clauses', 'variation', 'rollout', 'trackEvents', 'description', 'ref']);
const CLAUSE_FIELDS = new Set(['attribute', 'op', 'values', 'negate', 'contextKind', '_id']);
const ROLLOUT_FIELDS = new Set(['variations', 'bucketBy', 'seed', 'kind', 'contextKind']);
const WEIGHTED_FIELDS = new Set(['variation', 'weight', 'untracked']);
const TARGET_FIELDS = new Set(['values', 'variation', 'contextKind']);
const PREREQUISITE_FIELDS = new Set(['key', 'variation']);
const VARIATION_OR_ROLLOUT_FIELDS = new Set(['variation', 'rollout']);
const BODY_FIELDS = new Set(['flags', 'segments', 'flagValues']);
/** Fields of a LaunchDarkly segment that do not change whom it matches; accepted and not stored. */
const IGNORED_SEGMENT_FIELDS = ['version', 'deleted', 'generation', '_meta', 'description', 'name', 'tags', 'creationDate'];
const SEGMENT_FIELDS = new Set(['key', 'included', 'excluded', 'includedContexts', 'excludedContexts', 'rules', 'salt', 'unbounded', 'unboundedContextKind', ...IGNORED_SEGMENT_FIELDS]);
const SEGMENT_RULE_FIELDS = new Set(['id', 'clauses', 'weight', 'bucketBy', 'rolloutContextKind']);
const SEGMENT_TARGET_FIELDS = new Set(['contextKind', 'values']);

/** A flag of the tenant as it is now (in the request's environment). */
export interface ExistingFlag {
  type: FlagType;
  variations: Variation[];
}

/** One LaunchDarkly flag, mapped. */
export interface ImportedFlag {
  key: string;
  /** LaunchDarkly's version, kept in the audit record. */
  sourceVersion?: number;
  type: FlagType;
  /** Ids reused by position from the existing flag, so other environments keep their references. */
  variations: Variation[];
  /** For a new flag: the off variation's value, else the first variation's. */
  defaultValue: JsonValue;
  enabled: boolean;
  /** null: the type's default (false, else defaultValue), as LaunchDarkly serves no variation. */
  offValue: JsonValue | null;
  targets: Target[];
  rules: Rule[];
  prerequisites: Prerequisite[];
  salt: string;
  /** LaunchDarkly's, when the flag carries it (or the legacy `clientSide`); else the flag keeps its own. */
  clientSideAvailability?: ClientSideAvailability;
}

export interface ParsedImport {
  /** Flag key -> LaunchDarkly's flag object, in the order given. */
  flags: Map<string, Record<string, unknown>>;
  /** Segment key -> LaunchDarkly's segment object (tombstones left out, as for flags). */
  segments: Map<string, Record<string, unknown>>;
  /** Tombstones (`deleted: true`): LaunchDarkly serves nothing for them, so nothing is written. */
  skipped: Array<{ key: string; reason: string }>;
  errors: Record<string, string>;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * `{flags: {key: flag}}` (SDK data files, `/sdk/latest-all`), `{flags: [flag]}`, a plain array of
 * flags, and the data files' simplified `flagValues: {key: value}` (a flag that always serves value).
 */
export function parseLaunchDarklyData(body: unknown): ParsedImport {
  const out: ParsedImport = { flags: new Map(), segments: new Map(), skipped: [], errors: {} };
  // This body bypasses the global validation pipe (it may be an array), so it is checked here for
  // what Postgres cannot store and for nesting, before anything reads it.
  unstorable(body, out.errors);
  if (Object.keys(out.errors).length) return out;
  const add = (path: string, raw: unknown, mapKey?: string): void => {
    if (!isObject(raw)) {
      out.errors[path] = 'must be a flag object';
      return;
    }
    const key = raw.key ?? mapKey;
    if (typeof key !== 'string' || !FLAG_KEY_PATTERN.test(key)) {
      out.errors[`${path}.key`] = 'must be a flag key (a letter or digit, then up to 127 letters, digits, dots, dashes or underscores)';
      return;
    }
    if (mapKey !== undefined && raw.key !== undefined && raw.key !== mapKey) {
      out.errors[`${path}.key`] = `differs from the key it is listed under ('${mapKey}')`;
      return;
    }
    if (out.flags.has(key) || out.skipped.some((s) => s.key === key)) {
      out.errors[`${path}.key`] = `flag '${key}' is listed twice`;
      return;
    }
    if (raw.deleted === true) out.skipped.push({ key, reason: 'deleted in LaunchDarkly (a tombstone)' });
    else out.flags.set(key, raw);
  };

  let flags: unknown;
  if (Array.isArray(body)) flags = body;
  else if (isObject(body)) {
    for (const field of Object.keys(body)) if (!BODY_FIELDS.has(field)) out.errors[field] = 'is not an allowed field';
    flags = body.flags;
    if (body.segments !== undefined && !isObject(body.segments) && !Array.isArray(body.segments)) out.errors['segments'] = 'must be an object';
    else if (body.segments !== undefined) parseSegments(body.segments, out);
    if (body.flagValues !== undefined) {
      if (!isObject(body.flagValues)) out.errors['flagValues'] = 'must be an object of flag key to value';
      else {
        for (const [key, value] of Object.entries(body.flagValues)) {
          // The SDK's file data source makes each such value a flag that is on and always serves it.
          add(`flagValues.${key}`, { key, on: true, variations: [value], fallthrough: { variation: 0 }, offVariation: 0 }, key);
        }
      }
    }
    if (flags === undefined && body.flagValues === undefined) out.errors['flags'] = 'is required: an object of flag key to flag, or an array of flags';
  } else {
    out.errors['body'] = 'must be LaunchDarkly SDK data ({"flags": {...}}) or an array of flags';
    return out;
  }
  if (Array.isArray(flags)) flags.forEach((f, i) => add(`${flags === body ? '' : 'flags'}[${i}]`, f));
  else if (isObject(flags)) for (const [key, f] of Object.entries(flags)) add(`flags.${key}`, f, key);
  else if (flags !== undefined) out.errors['flags'] = 'must be an object of flag key to flag, or an array of flags';
  return out;
}

/** `segments: {key: segment}` or `[segment]`, as flags; a segment key follows the flag key rule. */
function parseSegments(segments: unknown, out: ParsedImport): void {
  const entries: Array<[string, unknown, string | undefined]> = Array.isArray(segments)
    ? segments.map((s, i) => [`segments[${i}]`, s, undefined])
    : Object.entries(segments as Record<string, unknown>).map(([k, s]) => [`segments.${k}`, s, k]);
  for (const [path, raw, mapKey] of entries) {
    if (!isObject(raw)) {
      out.errors[path] = 'must be a segment object';
      continue;
    }
    const key = raw.key ?? mapKey;
    if (typeof key !== 'string' || !FLAG_KEY_PATTERN.test(key)) out.errors[`${path}.key`] = 'must be a segment key (a letter or digit, then up to 127 letters, digits, dots, dashes or underscores)';
    else if (mapKey !== undefined && raw.key !== undefined && raw.key !== mapKey) out.errors[`${path}.key`] = `differs from the key it is listed under ('${mapKey}')`;
    else if (out.segments.has(key)) out.errors[`${path}.key`] = `segment '${key}' is listed twice`;
    else if (raw.deleted === true) out.skipped.push({ key, reason: 'a segment deleted in LaunchDarkly (a tombstone)' });
    else out.segments.set(key, raw);
  }
}

/**
 * Every segment key the import's segmentMatch clauses name (its flags' rules and its segments'),
 * read from LaunchDarkly's data as sent: what must exist, in the import or already stored.
 */
export function segmentKeysNamed(parsed: Pick<ParsedImport, 'flags' | 'segments'>): string[] {
  const keys = new Set<string>();
  for (const raw of [...parsed.flags.values(), ...parsed.segments.values()]) {
    if (!Array.isArray(raw.rules)) continue;
    for (const rule of raw.rules as unknown[]) {
      if (!isObject(rule) || !Array.isArray(rule.clauses)) continue;
      for (const c of rule.clauses as unknown[]) {
        if (isObject(c) && c.op === 'segmentMatch' && Array.isArray(c.values)) for (const v of c.values) if (typeof v === 'string') keys.add(v);
      }
    }
  }
  return [...keys];
}

const MAX_DEPTH = 64;
// A NUL, or a UTF-16 surrogate without its pair: Postgres refuses both in text and jsonb.
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Errors for strings (values or names) Postgres cannot store, and for JSON nested too deep; iterative. */
function unstorable(body: unknown, errors: Record<string, string>): void {
  const stack: Array<{ value: unknown; path: string; depth: number }> = [{ value: body, path: '', depth: 0 }];
  while (stack.length > 0 && Object.keys(errors).length < 20) {
    const { value, path, depth } = stack.pop()!;
    const at = path === '' ? 'body' : path;
    if (typeof value === 'string') {
      if (UNSTORABLE.test(value)) errors[at] = 'must not hold NUL characters or unpaired surrogates';
    } else if (typeof value === 'object' && value !== null) {
      if (depth >= MAX_DEPTH) {
        errors[at] = `is nested deeper than ${MAX_DEPTH} levels`;
        continue;
      }
      const entries = Array.isArray(value) ? value.map((v, i) => [`[${i}]`, v] as const) : Object.entries(value).map(([k, v]) => [`${path === '' ? '' : '.'}${k}`, v] as const);
      for (const [step, v] of entries) {
        if (!Array.isArray(value) && UNSTORABLE.test(step)) errors[at] = 'has a field name holding NUL characters or unpaired surrogates';
        else stack.push({ value: v, path: `${path}${step}`, depth: depth + 1 });
      }
    }
  }
}

/** The flag type LaunchDarkly's variations imply, or why there is none. */
export function inferFlagType(values: readonly unknown[]): FlagType | string {
  if (values.length === 0) return 'must hold at least one variation';
  const kinds = new Set(
    values.map((v) => {
      if (typeof v === 'boolean') return 'boolean';
      if (typeof v === 'string') return 'string';
      if (typeof v === 'number' && Number.isFinite(v)) return 'number';
      if (typeof v === 'object' && v !== null) return 'json';
      return 'null';
    }),
  );
  if (kinds.has('null')) return 'hold null: our flags are boolean, string, number or JSON (object/array) flags';
  if (kinds.size > 1) return `mix ${[...kinds].join(' and ')} values: our flags have one type`;
  return [...kinds][0] as FlagType;
}

/**
 * LaunchDarkly picks slice i when bucket < (w0 + ... + wi) / 100000, and the last slice when the
 * weights add up to less than the bucket; ours picks slice i when bucket * total < w0 + ... + wi.
 * So the weights become relative weights out of exactly 100000: what is missing goes to the last
 * slice, and what lies beyond 100000 (which no bucket reaches) is cut off.
 */
export function relativeWeights(weights: readonly number[]): number[] {
  const out: number[] = [];
  let sum = 0;
  for (const w of weights) {
    const kept = Math.max(0, Math.min(w, LD_WEIGHT_SCALE - sum));
    out.push(kept);
    sum += kept;
  }
  if (sum < LD_WEIGHT_SCALE && out.length > 0) out[out.length - 1] = (out[out.length - 1] as number) + LD_WEIGHT_SCALE - sum;
  return out;
}

function variationName(value: JsonValue, index: number): string {
  if (typeof value === 'string') return value.length > 0 && value.length <= 200 ? value : `variation ${index}`;
  if (typeof value === 'boolean' || typeof value === 'number') return String(value);
  return `variation ${index}`;
}

/**
 * Maps the parsed LaunchDarkly flags. `existing` gives the tenant's flags in this environment (for
 * ids to reuse and prerequisites outside the import); errors are keyed `flags.<key>.<path>` with
 * LaunchDarkly's own paths, so they name the flag and the clause.
 */
export function mapLaunchDarklyFlags(
  parsed: ReadonlyMap<string, Record<string, unknown>>,
  existing: (key: string) => ExistingFlag | undefined,
  newId: () => string,
  /**
   * Whether a segment exists once the import is written (in the import or in the environment).
   * Without it, segmentMatch is refused: its segments would not be written, and the clause would
   * silently match nobody.
   */
  segmentExists?: (key: string) => boolean,
): { flags: ImportedFlag[]; errors: Record<string, string> } {
  const errors: Record<string, string> = {};
  // Variation ids of every imported flag first: prerequisites name each other by index.
  const idsOf = new Map<string, string[]>();
  const typed = new Map<string, { type: FlagType; values: JsonValue[] }>();
  for (const [key, raw] of parsed) {
    const values = Array.isArray(raw.variations) ? (raw.variations as JsonValue[]) : undefined;
    if (values === undefined) {
      errors[`flags.${key}.variations`] = 'must be an array of values';
      continue;
    }
    const type = inferFlagType(values);
    if (!['boolean', 'string', 'number', 'json'].includes(type)) {
      errors[`flags.${key}.variations`] = `must ${type}`;
      continue;
    }
    const before = existing(key);
    if (before && before.type !== type) {
      errors[`flags.${key}.variations`] = `make a ${type} flag, but '${key}' is a ${before.type} flag here; delete it first to change its type`;
      continue;
    }
    const seen = new Map<string, number>();
    values.forEach((v, i) => {
      const first = seen.get(JSON.stringify(v));
      if (first !== undefined) errors[`flags.${key}.variations[${i}]`] = `repeats variations[${first}]: variation values must be distinct here (an off value names its variation by value)`;
      seen.set(JSON.stringify(v), i);
    });
    typed.set(key, { type: type as FlagType, values });
    idsOf.set(key, values.map((_, i) => before?.variations[i]?.id ?? newId()));
  }

  const flags: ImportedFlag[] = [];
  for (const [key, raw] of parsed) {
    const t = typed.get(key);
    const ids = idsOf.get(key);
    if (!t || !ids) continue;
    const at = (path: string) => `flags.${key}${path}`;
    const fail = (path: string, message: string): undefined => {
      errors[at(path)] ??= message;
      return undefined;
    };
    const unknownFields = (obj: Record<string, unknown>, allowed: ReadonlySet<string>, path: string): void => {
      for (const f of Object.keys(obj)) if (!allowed.has(f)) fail(`${path}.${f}`, 'is not a field LaunchDarkly\'s SDKs read here; nothing was imported, so nothing is silently dropped');
    };
    const validKind = (obj: Record<string, unknown>, path: string): boolean => importKindProblem(obj.contextKind, `${path}.contextKind`, fail);
    const variationId = (index: unknown, path: string): string | undefined => {
      if (typeof index === 'number' && Number.isInteger(index) && index >= 0 && index < ids.length) return ids[index];
      return fail(path, `names no variation of this flag (${JSON.stringify(index ?? null)}; it has ${ids.length})`);
    };
    const attribute = (name: unknown, obj: Record<string, unknown>, path: string) => importedAttribute(name, obj.contextKind, path, fail);
    const rollout = (r: unknown, path: string): Rollout | undefined => {
      if (!isObject(r)) return fail(path, 'must be an object');
      unknownFields(r, ROLLOUT_FIELDS, path);
      if (r.kind !== undefined && r.kind !== null && r.kind !== 'rollout') {
        return fail(`${path}.kind`, `a rollout of kind '${String(r.kind)}' (an experiment) cannot be imported: experiments are not supported`);
      }
      if (!validKind(r, path)) return undefined;
      if (!Array.isArray(r.variations) || r.variations.length === 0) return fail(`${path}.variations`, 'must be a non-empty array');
      const slots: Array<{ variationId: string; weight: number }> = [];
      (r.variations as unknown[]).forEach((s, i) => {
        const spath = `${path}.variations[${i}]`;
        if (!isObject(s)) return fail(spath, 'must be an object');
        unknownFields(s, WEIGHTED_FIELDS, spath);
        const id = variationId(s.variation, `${spath}.variation`);
        if (typeof s.weight !== 'number' || !Number.isFinite(s.weight) || s.weight < 0) return fail(`${spath}.weight`, `must be a number from 0 to ${LD_WEIGHT_SCALE}`);
        if (id !== undefined) slots.push({ variationId: id, weight: s.weight });
      });
      if (slots.length !== r.variations.length) return undefined;
      const weights = relativeWeights(slots.map((s) => s.weight));
      const out: Rollout = { variations: slots.map((s, i) => ({ variationId: s.variationId, weight: weights[i] as number })) };
      if (r.bucketBy !== undefined && r.bucketBy !== null) {
        const ref = attribute(r.bucketBy, r, `${path}.bucketBy`);
        if (ref === undefined) return undefined;
        out.bucketBy = ref.name;
      }
      // The kind bucketed, with or without bucketBy (without, the key of that kind).
      if (typeof r.contextKind === 'string' && r.contextKind !== '') out.contextKind = r.contextKind;
      if (r.seed !== undefined && r.seed !== null) {
        if (!Number.isSafeInteger(r.seed)) return fail(`${path}.seed`, 'must be an integer');
        out.seed = r.seed as number;
      }
      return out;
    };
    /** A fixed variation or a rollout (LaunchDarkly prefers the variation when both are given). */
    const servedBy = (obj: Record<string, unknown>, path: string): Pick<Rule, 'variationId' | 'rollout'> | undefined => {
      if (obj.variation !== undefined && obj.variation !== null) {
        const id = variationId(obj.variation, `${path}.variation`);
        return id === undefined ? undefined : { variationId: id };
      }
      if (obj.rollout !== undefined && obj.rollout !== null) {
        const r = rollout(obj.rollout, `${path}.rollout`);
        return r === undefined ? undefined : { rollout: r };
      }
      return fail(path, 'names no variation and no rollout');
    };

    unknownFields(raw, FLAG_FIELDS, '');
    if (raw.on !== undefined && typeof raw.on !== 'boolean') fail('.on', 'must be a boolean');
    if (raw.salt !== undefined && raw.salt !== null && typeof raw.salt !== 'string') fail('.salt', 'must be a string');
    if (raw.version !== undefined && !Number.isSafeInteger(raw.version)) fail('.version', 'must be an integer');

    let offValue: JsonValue | null = null;
    if (raw.offVariation !== undefined && raw.offVariation !== null) {
      const id = variationId(raw.offVariation, '.offVariation');
      if (id !== undefined) offValue = t.values[raw.offVariation as number] as JsonValue;
    }

    // Targets, in LaunchDarkly's order: contextTargets when there are any (a user entry there stands
    // for the `targets` entry of the same variation), else targets.
    const targetList = Array.isArray(raw.targets) ? (raw.targets as unknown[]) : [];
    if (raw.targets !== undefined && raw.targets !== null && !Array.isArray(raw.targets)) fail('.targets', 'must be an array');
    const targets: Target[] = [];
    const addTarget = (tgt: unknown, path: string): void => {
      if (!isObject(tgt)) return void fail(path, 'must be an object');
      unknownFields(tgt, TARGET_FIELDS, path);
      if (!Array.isArray(tgt.values) || tgt.values.some((v) => typeof v !== 'string')) return void fail(`${path}.values`, 'must be an array of context keys');
      if (!validKind(tgt, path)) return;
      const id = variationId(tgt.variation, `${path}.variation`);
      if (id === undefined || tgt.values.length === 0) return;
      const target: Target = { variationId: id, values: [...(tgt.values as string[])] };
      if (typeof tgt.contextKind === 'string' && tgt.contextKind !== '' && tgt.contextKind !== 'user') target.contextKind = tgt.contextKind;
      targets.push(target);
    };
    const contextTargets = Array.isArray(raw.contextTargets) ? (raw.contextTargets as unknown[]) : [];
    if (raw.contextTargets !== undefined && raw.contextTargets !== null && !Array.isArray(raw.contextTargets)) fail('.contextTargets', 'must be an array');
    if (contextTargets.length > 0) {
      contextTargets.forEach((ct, i) => {
        const path = `.contextTargets[${i}]`;
        if (!isObject(ct)) return void fail(path, 'must be an object');
        const kind = ct.contextKind === undefined || ct.contextKind === null || ct.contextKind === '' ? 'user' : ct.contextKind;
        if (kind === 'user') {
          // LaunchDarkly reads a user entry's keys from the first `targets` entry of its variation.
          const j = targetList.findIndex((tgt) => isObject(tgt) && tgt.variation === ct.variation);
          if (j >= 0) addTarget(targetList[j], `.targets[${j}]`);
        } else addTarget(ct, path);
      });
    } else targetList.forEach((tgt, i) => addTarget(tgt, `.targets[${i}]`));

    const rules: Rule[] = [];
    const ruleIds = new Set<string>();
    if (raw.rules !== undefined && raw.rules !== null && !Array.isArray(raw.rules)) fail('.rules', 'must be an array');
    (Array.isArray(raw.rules) ? (raw.rules as unknown[]) : []).forEach((r, i) => {
      const path = `.rules[${i}]`;
      if (!isObject(r)) return void fail(path, 'must be an object');
      unknownFields(r, RULE_FIELDS, path);
      if (!Array.isArray(r.clauses)) return void fail(`${path}.clauses`, 'must be an array');
      const clauses = importedClauses(r.clauses as unknown[], path, fail, segmentExists);
      const served = servedBy(r, path);
      if (served === undefined || clauses === undefined) return;
      let id = typeof r.id === 'string' && r.id !== '' && r.id !== FALLTHROUGH_RULE_ID && !ruleIds.has(r.id) ? r.id : `rule-${i}`;
      while (ruleIds.has(id)) id = `${id}-${i}`;
      ruleIds.add(id);
      const rule: Rule = { id, clauses, ...served };
      if (typeof r.description === 'string' && r.description !== '') rule.description = r.description;
      rules.push(rule);
    });

    // LaunchDarkly's fallthrough belongs to the environment; ours (the variations' weights) is shared
    // by every environment, so it becomes a last rule matching everyone, which serves it exactly.
    if (!isObject(raw.fallthrough)) fail('.fallthrough', 'is required: {variation} or {rollout}');
    else {
      unknownFields(raw.fallthrough, VARIATION_OR_ROLLOUT_FIELDS, '.fallthrough');
      const served = servedBy(raw.fallthrough, '.fallthrough');
      if (served !== undefined) rules.push({ id: FALLTHROUGH_RULE_ID, description: 'LaunchDarkly fallthrough', clauses: [], ...served });
    }

    const prerequisites: Prerequisite[] = [];
    if (raw.prerequisites !== undefined && raw.prerequisites !== null && !Array.isArray(raw.prerequisites)) fail('.prerequisites', 'must be an array');
    (Array.isArray(raw.prerequisites) ? (raw.prerequisites as unknown[]) : []).forEach((p, i) => {
      const path = `.prerequisites[${i}]`;
      if (!isObject(p)) return void fail(path, 'must be an object');
      unknownFields(p, PREREQUISITE_FIELDS, path);
      if (typeof p.key !== 'string') return void fail(`${path}.key`, 'must be a flag key');
      const otherIds = idsOf.get(p.key) ?? (parsed.has(p.key) ? undefined : existing(p.key)?.variations.map((v) => v.id));
      if (otherIds === undefined) {
        return void fail(`${path}.key`, parsed.has(p.key) ? `flag '${p.key}' could not be imported` : `names flag '${p.key}', which is neither in this import nor in this environment`);
      }
      const index = p.variation;
      if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= otherIds.length) {
        return void fail(`${path}.variation`, `names no variation of flag '${p.key}' (${JSON.stringify(index ?? null)})`);
      }
      prerequisites.push({ key: p.key, variationId: otherIds[index] as string });
    });

    const before = existing(key);
    const variations: Variation[] = t.values.map((value, i) => {
      const old = before?.variations[i];
      const same = old !== undefined && isDeepStrictEqual(old.value, value);
      return {
        id: ids[i] as string,
        name: same ? old.name : variationName(value, i),
        value,
        description: same ? (old.description ?? '') : '',
        weight: old?.weight ?? 0,
      };
    });
    const flag: ImportedFlag = {
      key,
      type: t.type,
      variations,
      defaultValue: offValue ?? (t.values[0] as JsonValue),
      enabled: raw.on === true,
      offValue,
      targets,
      rules,
      prerequisites,
      // LaunchDarkly hashes a flag without salt as `{key}..{value}`: an empty salt keeps that.
      salt: typeof raw.salt === 'string' ? raw.salt : '',
    };
    const clientSide = importedClientSideAvailability(raw, fail);
    if (clientSide !== undefined) flag.clientSideAvailability = clientSide;
    if (typeof raw.version === 'number') flag.sourceVersion = raw.version;
    if (!Object.keys(errors).some((e) => e.startsWith(`flags.${key}.`) || e === `flags.${key}`)) flags.push(flag);
  }
  return { flags, errors };
}

/**
 * LaunchDarkly's `clientSideAvailability` (a field left out reads as false, as its SDKs read it). Data
 * older than that field has only `clientSide`, the JavaScript SDK's checkbox of a time when mobile
 * keys evaluated every flag: `{usingEnvironmentId: clientSide, usingMobileKey: true}`. undefined when
 * the flag carries neither (a new flag is then server-only, an existing one keeps its own).
 */
export function importedClientSideAvailability(raw: Record<string, unknown>, fail: (path: string, message: string) => undefined): ClientSideAvailability | undefined {
  const availability = raw.clientSideAvailability;
  if (availability !== undefined && availability !== null) {
    if (!isObject(availability)) return fail('.clientSideAvailability', 'must be an object {usingEnvironmentId, usingMobileKey}');
    for (const field of Object.keys(availability)) {
      if (field !== 'usingEnvironmentId' && field !== 'usingMobileKey') return fail(`.clientSideAvailability.${field}`, 'is not a field LaunchDarkly\'s SDKs read here');
      if (typeof availability[field] !== 'boolean') return fail(`.clientSideAvailability.${field}`, 'must be a boolean');
    }
    return { usingEnvironmentId: availability.usingEnvironmentId === true, usingMobileKey: availability.usingMobileKey === true };
  }
  if (raw.clientSide === undefined || raw.clientSide === null) return undefined;
  if (typeof raw.clientSide !== 'boolean') return fail('.clientSide', 'must be a boolean');
  return { usingEnvironmentId: raw.clientSide, usingMobileKey: true };
}

type Fail = (path: string, message: string) => undefined;

/** A contextKind as LaunchDarkly wrote it: absent (user) or a valid kind. */
function importKindProblem(kind: unknown, path: string, fail: Fail): boolean {
  if (kind === undefined || kind === null || kind === '' || (kind !== MULTI_KIND && isValidContextKind(kind))) return true;
  fail(path, `'${String(kind)}' is not a context kind`);
  return false;
}

/**
 * An attribute as LaunchDarkly wrote it, with the contextKind that decides how it reads (as in our
 * model): none, a literal name even when it starts with `/` (old data); a kind, a reference.
 */
function importedAttribute(name: unknown, contextKind: unknown, path: string, fail: Fail): { name: string; contextKind?: string } | undefined {
  if (typeof name !== 'string' || name === '') return fail(path, 'must be a non-empty attribute name');
  const kind = typeof contextKind === 'string' && contextKind !== '' ? contextKind : undefined;
  if (parseClauseAttribute(name, kind).kind === ATTR_INVALID) return fail(path, `'${name}' is not a valid attribute reference`);
  return kind === undefined ? { name } : { name, contextKind: kind };
}

/**
 * A rule's clauses (a flag's or a segment's), or undefined when any cannot be imported (each
 * failure reported by path). segmentMatch keeps its segment keys; its attribute is ignored.
 */
function importedClauses(raw: readonly unknown[], path: string, fail: Fail, segmentExists?: (key: string) => boolean): Clause[] | undefined {
  const clauses: Clause[] = [];
  raw.forEach((c, j) => {
    const cpath = `${path}.clauses[${j}]`;
    if (!isObject(c)) return void fail(cpath, 'must be an object');
    for (const f of Object.keys(c)) if (!CLAUSE_FIELDS.has(f)) fail(`${cpath}.${f}`, "is not a field LaunchDarkly's SDKs read here; nothing was imported, so nothing is silently dropped");
    if (!(OPERATORS as readonly unknown[]).includes(c.op)) return void fail(`${cpath}.op`, `unknown operator '${String(c.op)}'`);
    if (!importKindProblem(c.contextKind, `${cpath}.contextKind`, fail)) return;
    if (!Array.isArray(c.values)) return void fail(`${cpath}.values`, 'must be an array');
    if (c.negate !== undefined && c.negate !== null && typeof c.negate !== 'boolean') return void fail(`${cpath}.negate`, 'must be a boolean');
    if (c.op === 'segmentMatch') {
      if (segmentExists === undefined) return void fail(`${cpath}.op`, 'segmentMatch: import its segments in the same request');
      const unknown = (c.values as unknown[]).findIndex((v) => typeof v !== 'string' || !segmentExists(v));
      if (unknown >= 0) return void fail(`${cpath}.values[${unknown}]`, `names no segment of this import or this environment (${JSON.stringify(c.values[unknown])})`);
      const clause: Clause = { attribute: typeof c.attribute === 'string' ? c.attribute : '', op: 'segmentMatch', values: [...(c.values as string[])] };
      if (c.negate === true) clause.negate = true;
      return void clauses.push(clause);
    }
    const attr = importedAttribute(c.attribute, c.contextKind, `${cpath}.attribute`, fail);
    if (attr === undefined) return;
    const clause: Clause = { attribute: attr.name, op: c.op as Clause['op'], values: c.values as JsonValue[] };
    if (attr.contextKind !== undefined) clause.contextKind = attr.contextKind;
    if (c.negate === true) clause.negate = true;
    clauses.push(clause);
  });
  return clauses.length === raw.length ? clauses : undefined;
}

/**
 * LaunchDarkly's segments (ParsedImport.segments) as ours, keeping whom each matches: keys per kind,
 * rules with their weights (absolute, out of 100000, as ours), bucketBy and rolloutContextKind, and
 * the salt (absent in LaunchDarkly hashes as '', so it becomes ''). Big segments (`unbounded`) keep
 * their members outside the segment and cannot be imported. Errors are keyed `segments.<key>.<path>`.
 */
export function mapLaunchDarklySegments(
  parsed: ReadonlyMap<string, Record<string, unknown>>,
  segmentExists: (key: string) => boolean,
): { segments: SegmentDefinition[]; errors: Record<string, string> } {
  const errors: Record<string, string> = {};
  const segments: SegmentDefinition[] = [];
  for (const [key, raw] of parsed) {
    const at = (path: string) => `segments.${key}${path}`;
    const fail: Fail = (path, message) => {
      errors[at(path)] ??= message;
      return undefined;
    };
    for (const f of Object.keys(raw)) if (!SEGMENT_FIELDS.has(f)) fail(`.${f}`, "is not a field LaunchDarkly's SDKs read here; nothing was imported, so nothing is silently dropped");
    if (raw.unbounded === true) fail('.unbounded', 'a big segment (its members live outside the segment) cannot be imported');
    if (raw.salt !== undefined && raw.salt !== null && typeof raw.salt !== 'string') fail('.salt', 'must be a string');
    const keys = (value: unknown, path: string): string[] => {
      if (value === undefined || value === null) return [];
      if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) return fail(path, 'must be an array of context keys') ?? [];
      return [...(value as string[])];
    };
    const byKind = (value: unknown, path: string): SegmentTarget[] => {
      if (value === undefined || value === null) return [];
      if (!Array.isArray(value)) return fail(path, 'must be an array') ?? [];
      const out: SegmentTarget[] = [];
      value.forEach((t: unknown, i) => {
        const tpath = `${path}[${i}]`;
        if (!isObject(t)) return void fail(tpath, 'must be an object');
        for (const f of Object.keys(t)) if (!SEGMENT_TARGET_FIELDS.has(f)) fail(`${tpath}.${f}`, "is not a field LaunchDarkly's SDKs read here");
        if (!importKindProblem(t.contextKind, `${tpath}.contextKind`, fail)) return;
        out.push({ contextKind: typeof t.contextKind === 'string' && t.contextKind !== '' ? t.contextKind : 'user', values: keys(t.values, `${tpath}.values`) });
      });
      return out;
    };
    const rules: SegmentRule[] = [];
    if (raw.rules !== undefined && raw.rules !== null && !Array.isArray(raw.rules)) fail('.rules', 'must be an array');
    (Array.isArray(raw.rules) ? (raw.rules as unknown[]) : []).forEach((r, i) => {
      const path = `.rules[${i}]`;
      if (!isObject(r)) return void fail(path, 'must be an object');
      for (const f of Object.keys(r)) if (!SEGMENT_RULE_FIELDS.has(f)) fail(`${path}.${f}`, "is not a field LaunchDarkly's SDKs read here");
      if (!Array.isArray(r.clauses)) return void fail(`${path}.clauses`, 'must be an array');
      const clauses = importedClauses(r.clauses as unknown[], path, fail, segmentExists);
      if (clauses === undefined) return;
      const rule: SegmentRule = { id: typeof r.id === 'string' && r.id !== '' && !rules.some((x) => x.id === r.id) ? r.id : `rule-${i}`, clauses };
      if (r.weight !== undefined && r.weight !== null) {
        if (typeof r.weight !== 'number' || !Number.isInteger(r.weight)) return void fail(`${path}.weight`, `must be an integer (out of ${LD_WEIGHT_SCALE})`);
        // LaunchDarkly compares bucket < weight / 100000: beyond the scale is everyone, below 0 nobody.
        rule.weight = Math.max(0, Math.min(LD_WEIGHT_SCALE, r.weight));
      }
      if (r.rolloutContextKind !== undefined && r.rolloutContextKind !== null && r.rolloutContextKind !== '') {
        if (!importKindProblem(r.rolloutContextKind, `${path}.rolloutContextKind`, fail)) return;
        rule.rolloutContextKind = r.rolloutContextKind as string;
      }
      if (r.bucketBy !== undefined && r.bucketBy !== null && r.bucketBy !== '') {
        const ref = importedAttribute(r.bucketBy, rule.rolloutContextKind, `${path}.bucketBy`, fail);
        if (ref === undefined) return;
        rule.bucketBy = ref.name;
      }
      rules.push(rule);
    });
    const segment: SegmentDefinition = {
      key,
      name: typeof raw.name === 'string' && raw.name !== '' ? raw.name : key,
      included: keys(raw.included, '.included'),
      excluded: keys(raw.excluded, '.excluded'),
      includedContexts: byKind(raw.includedContexts, '.includedContexts'),
      excludedContexts: byKind(raw.excludedContexts, '.excludedContexts'),
      rules,
      salt: typeof raw.salt === 'string' ? raw.salt : '',
    };
    if (typeof raw.description === 'string' && raw.description !== '') segment.description = raw.description;
    if (!Object.keys(errors).some((e) => e.startsWith(`segments.${key}.`))) segments.push(segment);
  }
  return { segments, errors };
}
