import { isValidContextKind, MULTI_KIND, USER_KIND } from './context';
import { isJsonValue, isPlainObject, valueMatchesType } from './json-value';
import { ATTR_INVALID, clauseValueProblem, contextKindOf, isOperator, namesContextKind, parseClauseAttribute } from './operators';
import { compileRegex, REGEX_INVALID } from './regex';
import { MAX_SEGMENT_DEPTH, SEGMENT_WEIGHT_SCALE } from './segment';
import { FLAG_TYPES, type FlagDefinition, type FlagType, type SegmentDefinition } from './types';

export { MAX_SEGMENT_DEPTH, SEGMENT_WEIGHT_SCALE } from './segment';

type SegmentLookup = (key: string) => SegmentDefinition | undefined;

/**
 * The fields of each object inside a flag: anything else is an error naming its path (CONTRACT.md
 * section 4). The flag's own fields are its container's to check (the management API's DTO; a flag
 * file carries name, tags... beside the definition).
 */
const VARIATION_FIELDS = new Set(['id', 'name', 'value', 'description', 'weight']);
const TARGET_FIELDS = new Set(['variationId', 'values', 'contextKind']);
const RULE_FIELDS = new Set(['id', 'description', 'clauses', 'variationId', 'rollout']);
const CLAUSE_FIELDS = new Set(['attribute', 'contextKind', 'op', 'values', 'negate']);
const ROLLOUT_FIELDS = new Set(['variations', 'bucketBy', 'contextKind', 'seed']);
const WEIGHTED_FIELDS = new Set(['variationId', 'weight']);
const PREREQUISITE_FIELDS = new Set(['key', 'variationId']);

function unknownFields(obj: Record<string, unknown>, allowed: ReadonlySet<string>, path: string, report: Report): void {
  for (const field of Object.keys(obj)) if (!allowed.has(field)) report(path === '' ? field : `${path}.${field}`, 'is not an allowed field');
}

export interface ValidationProblem {
  /** Where, as `rules[2].clauses[0].op`; '' for the flag itself. */
  path: string;
  message: string;
}

const TYPE_NAMES: Record<FlagType, string> = {
  boolean: 'a boolean',
  string: 'a string',
  number: 'a finite number',
  json: 'a JSON object or array',
};

/** What `checkFlagDefinition` finds: errors refuse the flag (422); warnings are reported with it. */
export interface FlagDefinitionCheck {
  errors: ValidationProblem[];
  warnings: ValidationProblem[];
}

/**
 * Everything that would make a flag evaluate to MALFORMED_FLAG, for the management API's 422
 * `errors`. The evaluator copes with all of it anyway. Same as `checkFlagDefinition(...).errors`.
 */
export function validateFlagDefinition(
  flag: FlagDefinition,
  lookup?: (key: string) => FlagDefinition | undefined,
  segmentLookup?: SegmentLookup,
): ValidationProblem[] {
  return checkFlagDefinition(flag, lookup, segmentLookup).errors;
}

/**
 * Errors: what cannot be evaluated at all (an unknown operator, a rule or target naming no
 * variation, an invalid attribute reference, a prerequisite cycle, values unlike the flag's type...)
 * or not within bounds (a regex the linear engine cannot run or longer than MAX_REGEX_PATTERN_LENGTH).
 *
 * Warnings: what LaunchDarkly stores and evaluates as non-matching, so a flag copied from it is
 * accepted unchanged while a typo stays visible: clause values their operator can never use (a
 * number for startsWith, a string for lessThan, an invalid regex, date or version, `null`), an
 * empty value list, a context key already targeted by an earlier target, rollout weights adding up
 * to 0 (every context gets the last slice). An empty `clauses` list is neither: such a rule matches
 * every context (LaunchDarkly's semantics), which is how "everyone else" is written.
 *
 * With `lookup` (the other flags of the environment), prerequisites are checked as well: the flag
 * exists, has the named variation, no prerequisite chain leads back to this flag, and the chains
 * below it stay within MAX_PREREQUISITE_DEPTH and MAX_PREREQUISITE_FLAGS (the flags above it are
 * prerequisiteBoundProblems' job: a lookup cannot list them).
 *
 * With `segmentLookup` (the segments of the environment), every segment a segmentMatch names exists
 * and its segmentMatch nesting stays within MAX_SEGMENT_DEPTH.
 */
export function checkFlagDefinition(
  flag: FlagDefinition,
  lookup?: (key: string) => FlagDefinition | undefined,
  segmentLookup?: SegmentLookup,
): FlagDefinitionCheck {
  const problems: ValidationProblem[] = [];
  const warnings: ValidationProblem[] = [];
  const report = (path: string, message: string): void => {
    problems.push({ path, message });
  };
  const warn = (path: string, message: string): void => {
    warnings.push({ path, message });
  };
  const result: FlagDefinitionCheck = { errors: problems, warnings };
  const raw: unknown = flag;
  if (!isPlainObject(raw)) {
    report('', 'must be an object');
    return result;
  }

  const nonEmptyString = (value: unknown, path: string): value is string => {
    if (typeof value === 'string' && value !== '') return true;
    report(path, 'must be a non-empty string');
    return false;
  };
  const list = (value: unknown, path: string): unknown[] => {
    if (Array.isArray(value)) return value;
    report(path, 'must be an array');
    return [];
  };
  const weight = (value: unknown, path: string): number => {
    if (typeof value === 'number' && Number.isFinite(value) && value >= 0) return value;
    report(path, 'must be a finite number >= 0');
    return 0;
  };

  const key = raw.key;
  nonEmptyString(key, 'key');
  const type = (FLAG_TYPES as readonly unknown[]).includes(raw.type) ? (raw.type as FlagType) : undefined;
  if (type === undefined) report('type', `must be one of ${FLAG_TYPES.join(', ')}`);
  const checkValue = (value: unknown, path: string): void => {
    if (type !== undefined ? !valueMatchesType(type, value) : !isJsonValue(value)) {
      report(path, type !== undefined ? `must be ${TYPE_NAMES[type]} (the flag's type is ${type})` : 'must be a JSON value');
    }
  };
  checkValue(raw.defaultValue, 'defaultValue');
  if (raw.offValue !== undefined) checkValue(raw.offValue, 'offValue');
  if (typeof raw.enabled !== 'boolean') report('enabled', 'must be a boolean');
  if (raw.salt !== undefined && typeof raw.salt !== 'string') report('salt', 'must be a string');
  if (raw.version !== undefined && !(Number.isInteger(raw.version) && (raw.version as number) >= 0)) {
    report('version', 'must be a non-negative integer');
  }
  if (raw.clientSideAvailability !== undefined) {
    const availability = raw.clientSideAvailability;
    if (!isPlainObject(availability)) report('clientSideAvailability', 'must be an object {usingEnvironmentId, usingMobileKey}');
    else {
      for (const field of ['usingEnvironmentId', 'usingMobileKey']) {
        if (typeof availability[field] !== 'boolean') report(`clientSideAvailability.${field}`, 'must be a boolean');
      }
      for (const field of Object.keys(availability)) {
        if (field !== 'usingEnvironmentId' && field !== 'usingMobileKey') report(`clientSideAvailability.${field}`, 'is not an allowed field');
      }
    }
  }

  const variationIds = new Set<string>();
  list(raw.variations, 'variations').forEach((v, i) => {
    const path = `variations[${i}]`;
    if (!isPlainObject(v)) return report(path, 'must be an object');
    unknownFields(v, VARIATION_FIELDS, path, report);
    if (nonEmptyString(v.id, `${path}.id`)) {
      if (variationIds.has(v.id)) report(`${path}.id`, `duplicate variation id '${v.id}'`);
      variationIds.add(v.id);
    }
    if (typeof v.name !== 'string') report(`${path}.name`, 'must be a string');
    if (v.description !== undefined && typeof v.description !== 'string') report(`${path}.description`, 'must be a string');
    checkValue(v.value, `${path}.value`);
    weight(v.weight, `${path}.weight`);
  });
  const variationRef = (value: unknown, path: string): void => {
    if (nonEmptyString(value, path) && !variationIds.has(value)) report(path, `names no variation of this flag ('${value}')`);
  };

  // Per kind, the first target of each key (LaunchDarkly's order: targets, or contextTargets when there are any).
  const targeted = new Map<string, string>();
  const targetKeys = (t: Record<string, unknown>, path: string, kind: string): void => {
    list(t.values, `${path}.values`).forEach((contextKey, j) => {
      if (!nonEmptyString(contextKey, `${path}.values[${j}]`)) return;
      const first = targeted.get(`${kind}\u0000${contextKey}`);
      if (first !== undefined && first !== path) {
        warn(`${path}.values[${j}]`, `context key '${contextKey}' is already targeted by ${first}, which wins`);
      } else targeted.set(`${kind}\u0000${contextKey}`, path);
    });
  };
  const contextTargets = list(raw.contextTargets ?? [], 'contextTargets');
  const targetList = list(raw.targets ?? [], 'targets');
  /** The checks every target shares; false when it is not an object. */
  const targetShape = (t: unknown, path: string): t is Record<string, unknown> => {
    if (!isPlainObject(t)) {
      report(path, 'must be an object');
      return false;
    }
    unknownFields(t, TARGET_FIELDS, path, report);
    variationRef(t.variationId, `${path}.variationId`);
    contextKind(t.contextKind, `${path}.contextKind`, report);
    return true;
  };
  targetList.forEach((t, i) => {
    const path = `targets[${i}]`;
    if (!targetShape(t, path)) return;
    // With contextTargets, a target's keys are checked where a user entry reaches it.
    if (contextTargets.length === 0) targetKeys(t, path, contextKindOf(t.contextKind));
    else list(t.values, `${path}.values`);
  });
  contextTargets.forEach((t, i) => {
    const path = `contextTargets[${i}]`;
    if (!targetShape(t, path)) return;
    if (contextKindOf(t.contextKind) !== USER_KIND) return targetKeys(t, path, contextKindOf(t.contextKind));
    // As in LaunchDarkly: a user entry stands for the first `targets` entry of its variation.
    list(t.values, `${path}.values`);
    if (Array.isArray(t.values) && t.values.length > 0) warn(`${path}.values`, "is not read: a user entry stands for the first 'targets' entry of its variation; list the keys there");
    const j = targetList.findIndex((u) => isPlainObject(u) && u.variationId === t.variationId);
    if (j < 0) warn(path, "no 'targets' entry serves this variation: this entry targets nobody");
    else targetKeys(targetList[j] as Record<string, unknown>, `targets[${j}]`, contextKindOf((targetList[j] as Record<string, unknown>).contextKind));
  });

  const ruleIds = new Set<string>();
  list(raw.rules ?? [], 'rules').forEach((r, i) => {
    const path = `rules[${i}]`;
    if (!isPlainObject(r)) return report(path, 'must be an object');
    unknownFields(r, RULE_FIELDS, path, report);
    if (nonEmptyString(r.id, `${path}.id`)) {
      if (ruleIds.has(r.id)) report(`${path}.id`, `duplicate rule id '${r.id}'`);
      ruleIds.add(r.id);
    }
    if (r.description !== undefined && typeof r.description !== 'string') report(`${path}.description`, 'must be a string');
    list(r.clauses, `${path}.clauses`).forEach((c, j) => validateClause(c, `${path}.clauses[${j}]`, report, warn, segmentLookup));

    const hasVariation = r.variationId !== undefined && r.variationId !== null;
    const hasRollout = r.rollout !== undefined && r.rollout !== null;
    if (hasVariation === hasRollout) {
      report(path, 'needs exactly one of variationId and rollout');
    }
    if (hasVariation) variationRef(r.variationId, `${path}.variationId`);
    if (!hasRollout) return;
    const rollout = r.rollout;
    const rpath = `${path}.rollout`;
    if (!isPlainObject(rollout)) return report(rpath, 'must be an object');
    unknownFields(rollout, ROLLOUT_FIELDS, rpath, report);
    const slots = list(rollout.variations, `${rpath}.variations`);
    if (Array.isArray(rollout.variations) && slots.length === 0) report(`${rpath}.variations`, 'must not be empty');
    let total = 0;
    slots.forEach((s, k) => {
      const spath = `${rpath}.variations[${k}]`;
      if (!isPlainObject(s)) return report(spath, 'must be an object');
      unknownFields(s, WEIGHTED_FIELDS, spath, report);
      variationRef(s.variationId, `${spath}.variationId`);
      total += weight(s.weight, `${spath}.weight`);
    });
    if (slots.length > 0 && total <= 0) warn(`${rpath}.variations`, 'weights add up to 0: every context gets the last variation');
    contextKind(rollout.contextKind, `${rpath}.contextKind`, report);
    if (rollout.bucketBy !== undefined && parseClauseAttribute(rollout.bucketBy, rollout.contextKind).kind === ATTR_INVALID) {
      report(`${rpath}.bucketBy`, attributeProblem(rollout.contextKind));
    }
    if (rollout.seed !== undefined && !Number.isSafeInteger(rollout.seed)) report(`${rpath}.seed`, 'must be an integer');
  });

  const prerequisiteKeys = new Set<string>();
  list(raw.prerequisites ?? [], 'prerequisites').forEach((p, i) => {
    const path = `prerequisites[${i}]`;
    if (!isPlainObject(p)) return report(path, 'must be an object');
    unknownFields(p, PREREQUISITE_FIELDS, path, report);
    const keyOk = nonEmptyString(p.key, `${path}.key`);
    const variationOk = nonEmptyString(p.variationId, `${path}.variationId`);
    if (!keyOk) return;
    const prereqKey = p.key as string;
    if (prereqKey === key) return report(`${path}.key`, 'a flag cannot be its own prerequisite');
    if (prerequisiteKeys.has(prereqKey)) return report(`${path}.key`, `duplicate prerequisite '${prereqKey}'`);
    prerequisiteKeys.add(prereqKey);
    if (lookup === undefined) return;
    const other = lookup(prereqKey);
    if (other === undefined) return report(`${path}.key`, `no flag '${prereqKey}' in this environment`);
    const otherVariations: unknown = other.variations;
    const hasVariation =
      Array.isArray(otherVariations) && otherVariations.some((v: unknown) => isPlainObject(v) && v.id === p.variationId);
    if (variationOk && !hasVariation) {
      report(`${path}.variationId`, `flag '${prereqKey}' has no variation '${String(p.variationId)}'`);
    }
    if (typeof key === 'string') {
      const cycle = findPathTo(key, prereqKey, lookup);
      if (cycle !== undefined) report(`${path}.key`, `prerequisite cycle: ${[key, ...cycle].join(' -> ')}`);
    }
  });
  if (lookup !== undefined && typeof key === 'string' && prerequisiteKeys.size > 0) {
    const keysOf: PrerequisiteKeys = (k) => (k === key ? [...prerequisiteKeys] : prerequisiteKeysOf(lookup(k)));
    const bound = prerequisiteBoundProblem(key, keysOf);
    if (bound !== undefined) report('prerequisites', `its prerequisites ${bound}`);
  }

  return result;
}

const SEGMENT_FIELDS = new Set(['key', 'name', 'description', 'included', 'excluded', 'includedContexts', 'excludedContexts', 'rules', 'salt', 'version']);
const SEGMENT_RULE_FIELDS = new Set(['id', 'clauses', 'weight', 'bucketBy', 'rolloutContextKind']);

/**
 * What makes a segment unusable (errors, for the management API's 422) or suspicious (warnings), by
 * path as flags' problems are. Unknown fields are errors, as CONTRACT.md section 4 says. With
 * `segmentLookup` (the environment's other segments), a segmentMatch naming an unknown segment, one
 * leading back to this segment (a cycle, which LaunchDarkly evaluates as MALFORMED_FLAG) or nesting
 * deeper than MAX_SEGMENT_DEPTH is an error.
 */
export function checkSegmentDefinition(segment: SegmentDefinition, segmentLookup?: SegmentLookup): FlagDefinitionCheck {
  const errors: ValidationProblem[] = [];
  const warnings: ValidationProblem[] = [];
  const report: Report = (path, message) => void errors.push({ path, message });
  const warn: Report = (path, message) => void warnings.push({ path, message });
  const raw: unknown = segment;
  if (!isPlainObject(raw)) return { errors: [{ path: '', message: 'must be an object' }], warnings };
  for (const field of Object.keys(raw)) if (!SEGMENT_FIELDS.has(field)) report(field, 'is not an allowed field');
  if (typeof raw.key !== 'string' || raw.key === '') report('key', 'must be a non-empty string');
  if (typeof raw.name !== 'string') report('name', 'must be a string');
  if (raw.description !== undefined && typeof raw.description !== 'string') report('description', 'must be a string');
  if (raw.salt !== undefined && typeof raw.salt !== 'string') report('salt', 'must be a string');
  const keys = (value: unknown, path: string): void => {
    if (!Array.isArray(value)) return report(path, 'must be an array of context keys');
    value.forEach((k, i) => {
      if (typeof k !== 'string' || k === '') report(`${path}[${i}]`, 'must be a non-empty string');
    });
  };
  keys(raw.included, 'included');
  keys(raw.excluded, 'excluded');
  for (const field of ['includedContexts', 'excludedContexts'] as const) {
    const list: unknown = raw[field];
    if (!Array.isArray(list)) {
      report(field, 'must be an array of {contextKind, values}');
      continue;
    }
    list.forEach((t: unknown, i) => {
      const path = `${field}[${i}]`;
      if (!isPlainObject(t)) return report(path, 'must be an object {contextKind, values}');
      for (const f of Object.keys(t)) if (f !== 'contextKind' && f !== 'values') report(`${path}.${f}`, 'is not an allowed field');
      if (t.contextKind === undefined || t.contextKind === null) report(`${path}.contextKind`, 'is required: the kind of the keys');
      else contextKind(t.contextKind, `${path}.contextKind`, report);
      keys(t.values, `${path}.values`);
    });
  }
  if (!Array.isArray(raw.rules)) report('rules', 'must be an array');
  else {
    const ids = new Set<string>();
    (raw.rules as unknown[]).forEach((r, i) => {
      const path = `rules[${i}]`;
      if (!isPlainObject(r)) return report(path, 'must be an object');
      for (const f of Object.keys(r)) if (!SEGMENT_RULE_FIELDS.has(f)) report(`${path}.${f}`, 'is not an allowed field');
      if (typeof r.id !== 'string' || r.id === '') report(`${path}.id`, 'must be a non-empty string');
      else if (ids.has(r.id)) report(`${path}.id`, `duplicate rule id '${r.id}'`);
      else ids.add(r.id);
      if (!Array.isArray(r.clauses)) report(`${path}.clauses`, 'must be an array');
      else (r.clauses as unknown[]).forEach((c, j) => validateClause(c, `${path}.clauses[${j}]`, report, warn, segmentLookup));
      if (r.weight !== undefined && r.weight !== null && !(Number.isInteger(r.weight) && (r.weight as number) >= 0 && (r.weight as number) <= SEGMENT_WEIGHT_SCALE)) {
        report(`${path}.weight`, `must be an integer from 0 to ${SEGMENT_WEIGHT_SCALE}`);
      }
      if (r.bucketBy !== undefined && r.bucketBy !== null && (typeof r.bucketBy !== 'string' || parseClauseAttribute(r.bucketBy, r.rolloutContextKind).kind === ATTR_INVALID)) {
        report(`${path}.bucketBy`, attributeProblem(r.rolloutContextKind));
      }
      contextKind(r.rolloutContextKind, `${path}.rolloutContextKind`, report);
    });
  }
  if (segmentLookup !== undefined && typeof raw.key === 'string') {
    const key = raw.key;
    const problem = segmentNestingProblem(segmentKeysOf(raw), (k) => (k === key ? raw : segmentLookup(k)), key);
    if (problem !== undefined) report('rules', problem);
  }
  return { errors, warnings };
}

/** The segment keys a flag's or segment's rules name in segmentMatch clauses, read defensively. */
function segmentKeysOf(definition: unknown): string[] {
  const rules: unknown = isPlainObject(definition) ? definition.rules : undefined;
  const keys: string[] = [];
  if (!Array.isArray(rules)) return keys;
  for (const r of rules as unknown[]) {
    if (!isPlainObject(r) || !Array.isArray(r.clauses)) continue;
    for (const c of r.clauses as unknown[]) {
      if (!isPlainObject(c) || c.op !== 'segmentMatch' || !Array.isArray(c.values)) continue;
      for (const v of c.values as unknown[]) if (typeof v === 'string') keys.push(v);
    }
  }
  return keys;
}

/**
 * Why the segments reached from `start` through segmentMatch cannot be evaluated: a cycle (through
 * `self`, the segment being written, or among stored ones) or a chain deeper than MAX_SEGMENT_DEPTH.
 * Unknown segments are reported where they are named. Memoised depth-first search: each segment once.
 */
function segmentNestingProblem(start: readonly string[], lookup: SegmentLookup | ((k: string) => unknown), self?: string): string | undefined {
  const depthOf = new Map<string, number>();
  const onPath: string[] = self === undefined ? [] : [self];
  let problem: string | undefined;
  const depth = (key: string): number => {
    if (problem !== undefined) return 0;
    const known = depthOf.get(key);
    if (known !== undefined) return known;
    if (onPath.includes(key)) {
      problem = `segmentMatch cycle: ${[...onPath.slice(onPath.indexOf(key)), key].join(' -> ')}`;
      return 0;
    }
    const definition = lookup(key);
    if (definition === undefined) return 0;
    onPath.push(key);
    let d = 1;
    for (const k of segmentKeysOf(definition)) d = Math.max(d, 1 + depth(k));
    onPath.pop();
    depthOf.set(key, d);
    return d;
  };
  // A segment being written counts itself: a flag naming it nests one deeper than its own segmentMatches.
  let deepest = self === undefined ? 0 : 1;
  for (const k of start) deepest = Math.max(deepest, depth(k) + (self === undefined ? 0 : 1));
  if (problem !== undefined) return problem;
  return deepest > MAX_SEGMENT_DEPTH ? `its segmentMatch clauses nest ${deepest} segments deep (at most ${MAX_SEGMENT_DEPTH})` : undefined;
}

/**
 * Bounds on the prerequisite graph, checked at write: evaluation is linear in the flags reachable
 * (memoised), and these keep that small. LaunchDarkly data rarely goes beyond two or three levels.
 */
export const MAX_PREREQUISITE_DEPTH = 10;
export const MAX_PREREQUISITE_FLAGS = 100;

type PrerequisiteKeys = (key: string) => readonly string[] | undefined;

/** The keys a stored flag's prerequisites name, read defensively. */
function prerequisiteKeysOf(definition: unknown): string[] {
  const prerequisites: unknown = isPlainObject(definition) ? definition.prerequisites : undefined;
  if (!Array.isArray(prerequisites)) return [];
  const keys: string[] = [];
  for (const p of prerequisites as unknown[]) if (isPlainObject(p) && typeof p.key === 'string') keys.push(p.key);
  return keys;
}

/**
 * Why `start`'s prerequisites go beyond the bounds, or undefined. Counts distinct flags reachable
 * (stopping past MAX_PREREQUISITE_FLAGS), then the longest chain among them; a stored cycle is not
 * followed around (cycles are refused on their own).
 */
function prerequisiteBoundProblem(start: string, keysOf: PrerequisiteKeys): string | undefined {
  const reached = new Set<string>();
  const queue: string[] = [start];
  for (let head = 0; head < queue.length; head++) {
    for (const k of keysOf(queue[head] as string) ?? []) {
      if (k === start || reached.has(k)) continue;
      reached.add(k);
      if (reached.size > MAX_PREREQUISITE_FLAGS) {
        return `reach more than ${MAX_PREREQUISITE_FLAGS} flags through prerequisites (at most ${MAX_PREREQUISITE_FLAGS})`;
      }
      queue.push(k);
    }
  }
  // Longest chain, memoised; at most MAX_PREREQUISITE_FLAGS + 1 flags, so the recursion is shallow.
  const depthOf = new Map<string, number>();
  const onPath = new Set<string>();
  const depth = (key: string): number => {
    const known = depthOf.get(key);
    if (known !== undefined) return known;
    onPath.add(key);
    let d = 0;
    for (const k of keysOf(key) ?? []) if (!onPath.has(k)) d = Math.max(d, 1 + depth(k));
    onPath.delete(key);
    depthOf.set(key, d);
    return d;
  };
  const d = depth(start);
  return d > MAX_PREREQUISITE_DEPTH ? `lead through a chain of ${d} prerequisites (at most ${MAX_PREREQUISITE_DEPTH} deep)` : undefined;
}

/**
 * The flags of an environment whose prerequisites go beyond MAX_PREREQUISITE_DEPTH or
 * MAX_PREREQUISITE_FLAGS: among `changed` and the flags that depend on them (all when `changed` is
 * undefined), since a change below a flag deepens every flag above it. `definitions` holds the
 * environment as it would be after the write. Each message completes "its prerequisites ...".
 */
export function prerequisiteBoundProblems(
  definitions: ReadonlyMap<string, Pick<FlagDefinition, 'prerequisites'>>,
  changed?: Iterable<string>,
): Array<{ key: string; message: string }> {
  const edges = new Map<string, string[]>();
  for (const [key, definition] of definitions) edges.set(key, prerequisiteKeysOf(definition));
  let affected: Iterable<string> = edges.keys();
  if (changed !== undefined) {
    const dependents = new Map<string, string[]>();
    for (const [key, keys] of edges) {
      for (const k of keys) {
        const list = dependents.get(k);
        if (list === undefined) dependents.set(k, [key]);
        else list.push(key);
      }
    }
    const seen = new Set<string>(changed);
    const queue = [...seen];
    for (let head = 0; head < queue.length; head++) {
      for (const k of dependents.get(queue[head] as string) ?? []) {
        if (seen.has(k)) continue;
        seen.add(k);
        queue.push(k);
      }
    }
    affected = seen;
  }
  const problems: Array<{ key: string; message: string }> = [];
  for (const key of affected) {
    if (!edges.has(key)) continue;
    const message = prerequisiteBoundProblem(key, (k) => edges.get(k));
    if (message !== undefined) problems.push({ key, message });
  }
  return problems;
}

type Report = (path: string, message: string) => void;

/** A `contextKind`: absent (`user`), or a context kind as LaunchDarkly's contexts carry them. */
function contextKind(kind: unknown, path: string, report: Report): void {
  if (kind === undefined || kind === null || (kind !== MULTI_KIND && isValidContextKind(kind))) return;
  report(path, "must be a context kind (letters, digits, '.', '_' and '-'; not 'kind' or 'multi'), or absent for 'user'");
}

function attributeProblem(kind: unknown): string {
  return namesContextKind(kind)
    ? 'must be an attribute reference: a name, `key`, or a /path (with contextKind the attribute is a reference)'
    : 'must be an attribute name, not empty (without contextKind it is taken literally, even when it starts with /)';
}

function validateClause(c: unknown, path: string, report: Report, warn: Report, segmentLookup?: SegmentLookup): void {
  if (!isPlainObject(c)) return report(path, 'must be an object');
  unknownFields(c, CLAUSE_FIELDS, path, report);
  contextKind(c.contextKind, `${path}.contextKind`, report);
  const op = c.op;
  if (op === 'segmentMatch') return validateSegmentMatch(c, path, report, warn, segmentLookup);
  if (typeof c.attribute !== 'string' || parseClauseAttribute(c.attribute, c.contextKind).kind === ATTR_INVALID) {
    report(`${path}.attribute`, attributeProblem(c.contextKind));
  }
  if (c.negate !== undefined && typeof c.negate !== 'boolean') report(`${path}.negate`, 'must be a boolean');
  if (!isOperator(op)) report(`${path}.op`, `unknown operator '${String(op)}'`);
  if (!Array.isArray(c.values)) return report(`${path}.values`, 'must be an array');
  if (c.values.length === 0) warn(`${path}.values`, c.negate === true ? 'is empty: the clause matches every context that has the attribute' : 'is empty: the clause never matches');
  (c.values as unknown[]).forEach((value, k) => {
    if (!isJsonValue(value)) return report(`${path}.values[${k}]`, 'must be a JSON value');
    if (op === 'matches' && typeof value === 'string') {
      // An over-long pattern, or one only a backtracking engine can run, could hold the event loop.
      const re = compileRegex(value);
      if (typeof re === 'string' && re !== REGEX_INVALID) return report(`${path}.values[${k}]`, `regular expression ${re}`);
    }
    const problem = isOperator(op) ? clauseValueProblem(op, value) : undefined;
    if (problem !== undefined) warn(`${path}.values[${k}]`, `${problem} for '${op as string}': this value never matches`);
  });
}

/**
 * segmentMatch: values are segment keys (strings: an error otherwise, unlike other operators'
 * values, since nothing else can be meant), the attribute is ignored (any string, or none), and with
 * `segmentLookup` each segment exists and nests within MAX_SEGMENT_DEPTH without a cycle.
 */
function validateSegmentMatch(c: Record<string, unknown>, path: string, report: Report, warn: Report, segmentLookup?: SegmentLookup): void {
  if (c.attribute !== undefined && typeof c.attribute !== 'string') report(`${path}.attribute`, 'must be a string (segmentMatch ignores it)');
  if (c.negate !== undefined && typeof c.negate !== 'boolean') report(`${path}.negate`, 'must be a boolean');
  if (!Array.isArray(c.values)) return report(`${path}.values`, 'must be an array of segment keys');
  if (c.values.length === 0) warn(`${path}.values`, c.negate === true ? 'is empty: the clause matches every context' : 'is empty: the clause never matches');
  const known: string[] = [];
  (c.values as unknown[]).forEach((value, k) => {
    if (typeof value !== 'string' || value === '') return report(`${path}.values[${k}]`, 'must be a segment key');
    if (segmentLookup === undefined) return;
    if (segmentLookup(value) === undefined) report(`${path}.values[${k}]`, `no segment '${value}' in this environment`);
    else known.push(value);
  });
  if (segmentLookup !== undefined && known.length > 0) {
    const problem = segmentNestingProblem(known, segmentLookup);
    if (problem !== undefined) report(`${path}.values`, problem);
  }
}

/**
 * The prerequisite chain from `start` back to `target`, or undefined. Iterative, with a visited set,
 * so stored cycles that do not involve `target` cannot loop it forever.
 */
function findPathTo(
  target: string,
  start: string,
  lookup: (key: string) => FlagDefinition | undefined,
): string[] | undefined {
  const parent = new Map<string, string | null>([[start, null]]);
  const queue: string[] = [start];
  for (let head = 0; head < queue.length; head++) {
    const current = queue[head] as string;
    const definition = lookup(current);
    const prerequisites: unknown = isPlainObject(definition) ? definition.prerequisites : undefined;
    if (!Array.isArray(prerequisites)) continue;
    for (const p of prerequisites as unknown[]) {
      if (!isPlainObject(p) || typeof p.key !== 'string') continue;
      if (p.key === target) {
        const chain = [target];
        for (let k: string | null = current; k !== null; k = parent.get(k) ?? null) chain.unshift(k);
        return chain;
      }
      if (!parent.has(p.key)) {
        parent.set(p.key, current);
        queue.push(p.key);
      }
    }
  }
  return undefined;
}
