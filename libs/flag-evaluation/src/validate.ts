import { isJsonValue, isPlainObject, valueMatchesType } from './json-value';
import { ATTR_INVALID, clauseValueProblem, isOperator, namesContextKind, parseClauseAttribute, USER_CONTEXT_KIND } from './operators';
import { compileRegex, REGEX_INVALID } from './regex';
import { FLAG_TYPES, type FlagDefinition, type FlagType, type SegmentDefinition } from './types';

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
): ValidationProblem[] {
  return checkFlagDefinition(flag, lookup).errors;
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
 */
export function checkFlagDefinition(
  flag: FlagDefinition,
  lookup?: (key: string) => FlagDefinition | undefined,
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

  const targeted = new Map<string, number>();
  list(raw.targets ?? [], 'targets').forEach((t, i) => {
    const path = `targets[${i}]`;
    if (!isPlainObject(t)) return report(path, 'must be an object');
    variationRef(t.variationId, `${path}.variationId`);
    list(t.values, `${path}.values`).forEach((contextKey, j) => {
      if (!nonEmptyString(contextKey, `${path}.values[${j}]`)) return;
      const first = targeted.get(contextKey);
      if (first !== undefined && first !== i) {
        warn(`${path}.values[${j}]`, `context key '${contextKey}' is already targeted by targets[${first}], which wins`);
      } else targeted.set(contextKey, i);
    });
  });

  const ruleIds = new Set<string>();
  list(raw.rules ?? [], 'rules').forEach((r, i) => {
    const path = `rules[${i}]`;
    if (!isPlainObject(r)) return report(path, 'must be an object');
    if (nonEmptyString(r.id, `${path}.id`)) {
      if (ruleIds.has(r.id)) report(`${path}.id`, `duplicate rule id '${r.id}'`);
      ruleIds.add(r.id);
    }
    if (r.description !== undefined && typeof r.description !== 'string') report(`${path}.description`, 'must be a string');
    list(r.clauses, `${path}.clauses`).forEach((c, j) => validateClause(c, `${path}.clauses[${j}]`, report, warn));

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
    const slots = list(rollout.variations, `${rpath}.variations`);
    if (Array.isArray(rollout.variations) && slots.length === 0) report(`${rpath}.variations`, 'must not be empty');
    let total = 0;
    slots.forEach((s, k) => {
      const spath = `${rpath}.variations[${k}]`;
      if (!isPlainObject(s)) return report(spath, 'must be an object');
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

/** A segment rule's `weight` is LaunchDarkly's absolute scale: 100000 is everyone. */
export const SEGMENT_WEIGHT_SCALE = 100000;
const SEGMENT_FIELDS = new Set(['key', 'name', 'description', 'included', 'excluded', 'includedContexts', 'excludedContexts', 'rules', 'salt', 'version']);
const SEGMENT_RULE_FIELDS = new Set(['id', 'clauses', 'weight', 'bucketBy', 'rolloutContextKind']);

/**
 * What makes a segment unusable (errors, for the management API's 422) or suspicious (warnings), by
 * path as flags' problems are. Unknown fields are errors, as CONTRACT.md section 4 says.
 */
export function checkSegmentDefinition(segment: SegmentDefinition): FlagDefinitionCheck {
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
      if (typeof t.contextKind !== 'string' || t.contextKind === '') report(`${path}.contextKind`, 'must be a non-empty string');
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
      else (r.clauses as unknown[]).forEach((c, j) => validateClause(c, `${path}.clauses[${j}]`, report, warn));
      if (r.weight !== undefined && r.weight !== null && !(Number.isInteger(r.weight) && (r.weight as number) >= 0 && (r.weight as number) <= SEGMENT_WEIGHT_SCALE)) {
        report(`${path}.weight`, `must be an integer from 0 to ${SEGMENT_WEIGHT_SCALE}`);
      }
      if (r.bucketBy !== undefined && r.bucketBy !== null && (typeof r.bucketBy !== 'string' || parseClauseAttribute(r.bucketBy, r.rolloutContextKind).kind === ATTR_INVALID)) {
        report(`${path}.bucketBy`, attributeProblem(r.rolloutContextKind));
      }
      if (r.rolloutContextKind !== undefined && r.rolloutContextKind !== null && (typeof r.rolloutContextKind !== 'string' || r.rolloutContextKind === '')) {
        report(`${path}.rolloutContextKind`, 'must be a non-empty string');
      }
    });
  }
  return { errors, warnings };
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

/** A clause's or rollout's `contextKind`: absent, or `user` (our contexts have that one kind). */
function contextKind(kind: unknown, path: string, report: Report): void {
  if (kind === undefined || kind === null || kind === USER_CONTEXT_KIND) return;
  report(path, `must be '${USER_CONTEXT_KIND}' or absent (our contexts have one kind, '${USER_CONTEXT_KIND}')`);
}

function attributeProblem(kind: unknown): string {
  return namesContextKind(kind)
    ? 'must be an attribute reference: a name, `key`, or a /path (with contextKind the attribute is a reference)'
    : 'must be an attribute name, not empty (without contextKind it is taken literally, even when it starts with /)';
}

function validateClause(c: unknown, path: string, report: Report, warn: Report): void {
  if (!isPlainObject(c)) return report(path, 'must be an object');
  contextKind(c.contextKind, `${path}.contextKind`, report);
  if (typeof c.attribute !== 'string' || parseClauseAttribute(c.attribute, c.contextKind).kind === ATTR_INVALID) {
    report(`${path}.attribute`, attributeProblem(c.contextKind));
  }
  if (c.negate !== undefined && typeof c.negate !== 'boolean') report(`${path}.negate`, 'must be a boolean');
  const op = c.op;
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
