import type { FlagType, JsonValue } from '@flagship/domain';
import {
  type FlagDefinition,
  prerequisiteBoundProblems,
  type SegmentDefinition,
  SERVER_ONLY,
  validateFlagDefinition,
  valueMatchesType,
  type Variation,
} from '@flagship/flag-evaluation';
import type { MeasuredDefinition } from '@flagship/persistence';
import { ProblemException } from '@flagship/problem-details';
import { oversized, sizeErrors } from './flag-size';
import type { FlagEntity, FlagEnvironmentEntity } from './flag.entity';
import { definitionOf, etagOf } from './flag.mapper';
import { FlagProblems } from './flags.errors';
import type { FlagRow, FlagTargetingFields } from './flags.repository';
import type { ImportedFlag, ParsedImport } from './launchdarkly-import';

/**
 * The rules of flag writes, as pure functions of what the service read: each answers the problems
 * it finds (a 422's `errors`, or the refusal to throw), so they are proven without I/O.
 */

/** `GET /api/flags/export` would shadow a flag with this key. */
export const RESERVED_KEYS: readonly string[] = ['export'];
/** An import is bounded so that one transaction (and the locks it holds) stays short. */
export const IMPORT_MAX_FLAGS = 2000;

const typeName = (t: FlagType): string => (t === 'json' ? 'a JSON object or array' : `a ${t}`);
const reserved = (key: string): string => `${key} is reserved by the API's paths`;

/** A new flag's own problems: its key, its default value and its variations' values against its type. */
export function newFlagProblems(flag: { key: string; type: FlagType; defaultValue?: unknown }, variations: ReadonlyArray<{ value: unknown }>, variationsField: string): Record<string, string> {
  const errors: Record<string, string> = {};
  if (RESERVED_KEYS.includes(flag.key)) errors['key'] = reserved(flag.key);
  if (flag.defaultValue === undefined) errors['defaultValue'] = 'is required';
  else if (!valueMatchesType(flag.type, flag.defaultValue)) errors['defaultValue'] = `must be ${typeName(flag.type)}`;
  variations.forEach((v, i) => {
    if (!valueMatchesType(flag.type, v.value)) errors[`${variationsField}[${i}].value`] = `must be ${typeName(flag.type)}`;
  });
  return errors;
}

/** A new flag's variations: those sent, else `true` and `false` for a boolean, else one holding the default. */
export function newFlagVariations(
  flag: { type: FlagType; defaultValue: JsonValue },
  sent: ReadonlyArray<{ name: string; value: JsonValue; description?: string; weight?: number }> | undefined,
  newId: () => string,
): Variation[] {
  if (sent?.length) return sent.map((v) => ({ id: newId(), name: v.name, value: v.value, description: v.description ?? '', weight: v.weight ?? 0 }));
  if (flag.type === 'boolean') {
    return [
      { id: newId(), name: 'true', value: true, description: '', weight: 0 },
      { id: newId(), name: 'false', value: false, description: '', weight: 0 },
    ];
  }
  return [{ id: newId(), name: 'default', value: flag.defaultValue, description: '', weight: 0 }];
}

/** RFC 9110 If-Match: `*`, or a list of (strong) entity tags. */
export function etagMatches(header: string, current: string): boolean {
  if (header.trim() === '*') return true;
  return header.split(',').some((t) => t.trim().replace(/^W\//, '') === current);
}

/** 412 when the request's If-Match names another version of the flag than the one it would change. */
export function staleWrite(ifMatch: string | undefined, row: FlagRow): ProblemException | undefined {
  if (ifMatch === undefined || etagMatches(ifMatch, etagOf(row))) return undefined;
  return new ProblemException(FlagProblems['flag-changed'], `The flag is at version ${etagOf(row)}; read it again and retry.`, { currentVersion: etagOf(row) });
}

/**
 * The problems of a flag as a write leaves it in `environment`: its default against its type, its
 * definition with prerequisites resolved against `current` (the environment's flags before the
 * write), the chains of the flags above it when its prerequisites changed, and, when its variations
 * or default changed (`otherEnvironments` given), its definition in every other environment. With
 * `segmentLookup` (the environment's segments), a segmentMatch naming a segment the environment does
 * not have is refused by path: it would never match, silently.
 */
export function flagProblems(
  flag: FlagEntity,
  env: FlagEnvironmentEntity,
  environment: string,
  current: readonly FlagDefinition[],
  otherEnvironments?: readonly FlagEnvironmentEntity[],
  segmentLookup?: SegmentLookup,
): Record<string, string> {
  const errors: Record<string, string> = {};
  if (!valueMatchesType(flag.type, flag.defaultValue)) errors['defaultValue'] = `must be ${typeName(flag.type)}`;
  const others = new Map(current.map((d) => [d.key, d]));
  const def = definitionOf(flag, env);
  const prerequisitesChanged = JSON.stringify(others.get(def.key)?.prerequisites ?? []) !== JSON.stringify(def.prerequisites ?? []);
  others.set(def.key, def);
  for (const p of validateFlagDefinition(def, (k) => others.get(k), segmentLookup)) errors[p.path || 'flag'] = p.message;
  // New prerequisites deepen the flags above this one too; the validator saw only the chains below it.
  for (const p of prerequisitesChanged ? prerequisiteBoundProblems(others, [def.key]) : []) {
    if (p.key !== def.key) errors['prerequisites'] ??= `flag '${p.key}' depends on this one, and its prerequisites would ${p.message}`;
  }
  for (const other of otherEnvironments ?? []) {
    if (other.environmentKey === environment) continue;
    for (const p of validateFlagDefinition(definitionOf(flag, other))) errors[`environments.${other.environmentKey}.${p.path}`] = p.message;
  }
  return errors;
}

/**
 * The problems of new flags written together in one environment (`definitions`: the environment's
 * flags as the write left them; `segmentLookup`: its segments), keyed `<key>.<path>`: each
 * definition, and the prerequisite bounds.
 */
export function newFlagsProblems(definitions: ReadonlyMap<string, FlagDefinition>, keys: readonly string[], segmentLookup?: SegmentLookup): Record<string, string> {
  const errors: Record<string, string> = {};
  for (const key of keys) {
    const def = definitions.get(key);
    if (def === undefined) continue;
    for (const p of validateFlagDefinition(def, (k) => definitions.get(k), segmentLookup)) errors[`${key}.${p.path || 'flag'}`] = p.message;
  }
  for (const p of prerequisiteBoundProblems(definitions, keys)) errors[`${p.key}.prerequisites`] ??= `its prerequisites ${p.message}`;
  return errors;
}

/** The environment's segments by key (what a flag's segmentMatch clauses are checked against). */
export type SegmentLookup = (key: string) => SegmentDefinition | undefined;

/** A SegmentLookup over `segments`. */
export function segmentLookupOf(segments: readonly SegmentDefinition[]): SegmentLookup {
  const byKey = new Map(segments.map((s) => [s.key, s]));
  return (key) => byKey.get(key);
}

/** 409 when other flags name this one as a prerequisite (in any environment): deleting it would break them. */
export function inUse(key: string, dependents: readonly string[]): ProblemException | undefined {
  if (dependents.length === 0) return undefined;
  return new ProblemException(FlagProblems['flag-in-use'], `Flags ${dependents.join(', ')} name ${key} as a prerequisite; remove that first.`, { dependents: [...dependents] });
}

/**
 * A 422's `errors` when a write grew a definition past `maxBytes` (FLAG_MAX_BYTES), at the field
 * `errorKey` names; undefined when none. Only grown ones count: a flag stored before the limit can
 * still be shrunk, renamed or deleted.
 */
export function sizeProblems(measured: readonly MeasuredDefinition[], maxBytes: number, errorKey: (d: MeasuredDefinition) => string): Record<string, string> | undefined {
  const over = oversized(measured, maxBytes);
  return over.length > 0 ? sizeErrors(over, maxBytes, errorKey) : undefined;
}

/** The fields of a request that are part of a flag's definition (what FLAG_MAX_BYTES bounds): a 422 names the longest sent. */
export const DEFINITION_FIELDS: readonly string[] = ['defaultValue', 'flag_variations', 'variations', 'offValue', 'targets', 'rules', 'prerequisites', 'salt', 'enabled'];

/** A LaunchDarkly import's request problems before anything is read: the parser's, and reserved keys. */
export function importRequestProblems(parsed: ParsedImport): Record<string, string> {
  const errors = { ...parsed.errors };
  for (const key of RESERVED_KEYS) if (parsed.flags.has(key)) errors[`flags.${key}.key`] = reserved(key);
  return errors;
}

/** What an import leaves of one flag in the request's environment: its global row and that environment's row. */
export interface ImportedRows {
  flag: FlagEntity;
  env: FlagEnvironmentEntity;
}

/** The targeting an import writes in the request's environment. */
export function importedTargeting(f: ImportedFlag): FlagTargetingFields {
  return { enabled: f.enabled, offValue: f.offValue, targets: f.targets, rules: f.rules, prerequisites: f.prerequisites, salt: f.salt };
}

/** The rows each imported flag will have (`locked`: the existing ones, by key); a new flag is at version 0 until inserted. */
export function importedRows(flags: readonly ImportedFlag[], locked: ReadonlyMap<string, FlagRow>, environment: string): Map<string, ImportedRows> {
  const out = new Map<string, ImportedRows>();
  for (const f of flags) {
    const before = locked.get(f.key);
    const clientSideAvailability = f.clientSideAvailability ?? before?.flag.clientSideAvailability ?? { ...SERVER_ONLY };
    const flag: FlagEntity = before
      ? { ...before.flag, variations: f.variations, clientSideAvailability }
      : { tenantId: '', id: '', key: f.key, projectId: null, name: f.key, type: f.type, defaultValue: f.defaultValue, description: '', tags: [], variations: f.variations, clientSideAvailability, version: 0, createdAt: new Date(0), updatedAt: new Date(0) };
    const env: FlagEnvironmentEntity = before
      ? { ...before.env, environmentKey: environment, ...importedTargeting(f) }
      : { tenantId: '', flagId: '', environmentKey: environment, ...importedTargeting(f), version: 0, updatedAt: new Date(0) };
    out.set(f.key, { flag, env });
  }
  return out;
}

/** Whether an import changes the flag's variations (so its other environments must stay valid with them). */
export function variationsChange(before: FlagRow | undefined, f: ImportedFlag): boolean {
  return before !== undefined && JSON.stringify(before.flag.variations) !== JSON.stringify(f.variations);
}

/** Whether an import changes the flag's global fields: its variations or its client-side availability. */
export function globalsChange(before: FlagRow | undefined, f: ImportedFlag, after: FlagEntity): boolean {
  if (before === undefined) return false;
  const x = before.flag.clientSideAvailability;
  const y = after.clientSideAvailability;
  return variationsChange(before, f) || x.usingEnvironmentId !== y.usingEnvironmentId || x.usingMobileKey !== y.usingMobileKey;
}

/**
 * An import's problems, validated together (prerequisites may name flags of the same import),
 * keyed `flags.<key>.<path>` in LaunchDarkly's terms: each flag in the request's environment
 * (`current`: that environment's flags before it), each flag whose variations change in its other
 * environments (`otherEnvironments`: flag id -> its rows), and the prerequisite bounds of all of them.
 */
export function importProblems(
  flags: readonly ImportedFlag[],
  rows: ReadonlyMap<string, ImportedRows>,
  current: readonly FlagDefinition[],
  locked: ReadonlyMap<string, FlagRow>,
  otherEnvironments: ReadonlyMap<string, readonly FlagEnvironmentEntity[]>,
): Record<string, string> {
  const errors: Record<string, string> = {};
  const merged = new Map(current.map((d) => [d.key, d]));
  for (const [key, r] of rows) merged.set(key, definitionOf(r.flag, r.env));
  for (const f of flags) {
    const { flag } = rows.get(f.key)!;
    for (const p of validateFlagDefinition(merged.get(f.key)!, (k) => merged.get(k))) errors[`flags.${f.key}.${importPath(p.path, f.rules.length)}`] = p.message;
    const before = locked.get(f.key);
    if (before && variationsChange(before, f)) {
      const others = (otherEnvironments.get(before.flag.id) ?? []).filter((e) => e.environmentKey !== before.env.environmentKey).sort((a, b) => a.environmentKey.localeCompare(b.environmentKey));
      for (const other of others) {
        for (const p of validateFlagDefinition(definitionOf(flag, other))) errors[`flags.${f.key}.environments.${other.environmentKey}.${p.path}`] = p.message;
      }
    }
  }
  for (const p of prerequisiteBoundProblems(merged, rows.keys())) errors[`flags.${p.key}.prerequisites`] ??= `its prerequisites ${p.message}`;
  return errors;
}

/** Our validator's path of an imported flag in LaunchDarkly's terms: the last rule is its fallthrough. */
function importPath(path: string, ruleCount: number): string {
  const last = `rules[${ruleCount - 1}]`;
  return path.startsWith(last) ? `fallthrough${path.slice(last.length)}` : path;
}
